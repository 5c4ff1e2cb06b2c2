//! Names for the functions the transforms generate, shared by `grad` and
//! `vmap` (a leaf module: it knows only the module's function names).

use pjc_ir::Module;
use std::collections::HashSet;

/// The names of the functions one transform generates: new names, unused in
/// the module and by the functions generated so far.
#[derive(Default)]
pub(crate) struct FuncNames {
    taken: HashSet<String>,
}

impl FuncNames {
    /// `base`, else `base.1`, `base.2`, ...: the first name free in `m` and here.
    pub fn fresh(&mut self, m: &Module, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while m.func_by_name(&name).is_some() || self.taken.contains(&name) {
            name = format!("{base}.{k}");
            k += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Frees a name (of a function dropped again).
    pub fn release(&mut self, name: &str) {
        self.taken.remove(name);
    }
}
