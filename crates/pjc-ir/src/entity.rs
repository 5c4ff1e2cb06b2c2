//! Typed u32 handles and the arenas that own what they name (Cranelift's
//! entity pattern, without the dependency): a `Value` can never index the
//! instruction arena by mistake.

use std::marker::PhantomData;

/// A handle type: a u32 newtype that indexes one kind of arena.
pub trait EntityRef: Copy + Eq {
    fn new(index: usize) -> Self;
    fn index(self) -> usize;
}

macro_rules! entity {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub struct $name(u32);
        impl EntityRef for $name {
            fn new(index: usize) -> Self {
                $name(u32::try_from(index).expect("too many entities"))
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity!(
    /// An SSA value of one function (a parameter or an instruction result).
    Value, "v"
);
entity!(
    /// An instruction of one function.
    Inst, "inst"
);
entity!(
    /// A function of a module.
    FuncId, "fn"
);

/// An arena owning entities of one kind, indexed by their handle.
#[derive(Clone, Debug, PartialEq)]
pub struct PrimaryMap<K, V> {
    items: Vec<V>,
    _k: PhantomData<K>,
}

impl<K: EntityRef, V> Default for PrimaryMap<K, V> {
    fn default() -> Self {
        PrimaryMap { items: Vec::new(), _k: PhantomData }
    }
}

impl<K: EntityRef, V> PrimaryMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn push(&mut self, v: V) -> K {
        self.items.push(v);
        K::new(self.items.len() - 1)
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn keys(&self) -> impl Iterator<Item = K> {
        (0..self.items.len()).map(K::new)
    }
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.items.iter()
    }
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }
}

impl<K: EntityRef, V> std::ops::Index<K> for PrimaryMap<K, V> {
    type Output = V;
    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: EntityRef, V> std::ops::IndexMut<K> for PrimaryMap<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
    }
}
