//! What the propagation tests share: loading a program and reading back
//! every value's propagated sharding.

use pjc_ir::{FuncKind, Module};
use std::collections::BTreeMap;

pub fn load(src: &str) -> Module {
    pjc_front::load(src).unwrap_or_else(|d| panic!("{}", pjc_front::render("test.pir", src, &d)))
}

/// `@func %value` (and `@func -> k` for declared results) to its sharding,
/// after propagation, for every func.
pub fn shardings(m: &Module) -> BTreeMap<String, String> {
    let entry = m.func_by_name("main").unwrap();
    let p = pjc_sharding::propagate(m, entry);
    let a = pjc_sharding::annotate(m, &p);
    let mut out = BTreeMap::new();
    for f in a.funcs.values().filter(|f| f.kind == FuncKind::Global) {
        for v in f.values.values() {
            out.insert(format!("@{} %{}", f.name, v.name), v.sharding.as_ref().unwrap().to_string());
        }
        for (k, r) in f.results.iter().enumerate() {
            out.insert(format!("@{} -> {k}", f.name), r.sharding.as_ref().unwrap().to_string());
        }
    }
    out
}
