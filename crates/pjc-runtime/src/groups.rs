//! Device groups (spec section 8), as the compiler tabled them, and shard
//! blocks (spec section 6) as pure functions of the mesh (checkpoints written
//! on another mesh are re-split with them), so that every rank computes the
//! same answer without talking to the others.

use pjc_ir::{Mesh, Sharding};
use pjc_plan::GroupTable;

/// `device`'s group in a compiled group table: its members in group order,
/// `device`'s position in it, and a color shared by exactly the members of
/// this group (the group's index in the table), as `MPI_Comm_split` needs.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupOf {
    pub members: Vec<u64>,
    pub pos: usize,
    pub color: u64,
}

/// Looks `device` up in `table` (which the compiler built over the mesh).
pub fn group_of(table: &GroupTable, device: u64) -> Result<GroupOf, String> {
    let (g, pos) = table.find(device).ok_or_else(|| format!("device {device} is in no group over [{}] (a damaged executable?)", table.axes.join(", ")))?;
    Ok(GroupOf { members: table.groups[g].clone(), pos, color: g as u64 })
}

/// The table of `axes` among a program's group tables.
pub fn table_for<'t>(tables: &'t [GroupTable], axes: &[String]) -> Result<&'t GroupTable, String> {
    tables.iter().find(|t| t.axes == axes).ok_or_else(|| format!("the executable carries no device groups over [{}]", axes.join(", ")))
}

/// The block of a global array of shape `global` that `device` holds under
/// sharding `s` (None: replicated): per dimension, (start, size).
pub fn shard_block(mesh: &Mesh, s: Option<&Sharding>, global: &[usize], device: u64) -> Vec<(usize, usize)> {
    let coords = mesh.coords(device);
    (0..global.len())
        .map(|d| {
            let axes: &[String] = s.map_or(&[], |s| s.dim_axes(d));
            let mut index = 0u64;
            let mut n = 1u64;
            for a in axes {
                if let Some(ai) = mesh.axis(a) {
                    index = index * mesh.axes[ai].size + coords[ai];
                    n *= mesh.axes[ai].size;
                }
            }
            let size = global[d] / n as usize;
            (index as usize * size, size)
        })
        .collect()
}

/// Whether `device` is the first holder of its block under `s`: its
/// coordinates on every axis the sharding does not use are 0. Assembling a
/// global array from these devices' blocks covers it exactly once.
pub fn is_block_owner(mesh: &Mesh, s: Option<&Sharding>, device: u64) -> bool {
    let coords = mesh.coords(device);
    mesh.axes.iter().enumerate().all(|(i, a)| coords[i] == 0 || s.is_some_and(|s| s.axes().any(|x| x == a.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pjc_ir::{MeshAxis, Span};

    fn mesh(axes: &[(&str, u64)]) -> Mesh {
        Mesh { axes: axes.iter().map(|(n, s)| MeshAxis { name: n.to_string(), size: *s, span: Span::NONE }).collect() }
    }
    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn groups_come_from_the_table() {
        let m = mesh(&[("a", 2), ("b", 3)]);
        // device 4 = (a=1, b=1)
        let t = GroupTable::build(&m, &s(&["b"])).unwrap();
        assert_eq!(group_of(&t, 4).unwrap(), GroupOf { members: vec![3, 4, 5], pos: 1, color: 1 });
        // b major: order (b=0,a=0),(b=0,a=1),(b=1,a=0),... = 0,3,1,4,2,5.
        let t = GroupTable::build(&m, &s(&["b", "a"])).unwrap();
        assert_eq!(group_of(&t, 4).unwrap(), GroupOf { members: vec![0, 3, 1, 4, 2, 5], pos: 3, color: 0 });
        assert!(group_of(&t, 6).is_err());
        assert!(table_for(&[t], &s(&["a"])).is_err());
    }

    #[test]
    fn blocks_and_owners() {
        let m = mesh(&[("data", 2), ("model", 2)]);
        let sh = Sharding { dims: vec![pjc_ir::DimSharding::Axes(s(&["model"])), pjc_ir::DimSharding::Replicated] };
        assert_eq!(shard_block(&m, Some(&sh), &[8, 3], 3), vec![(4, 4), (0, 3)]);
        assert_eq!(shard_block(&m, None, &[8, 3], 3), vec![(0, 8), (0, 3)]);
        let owners: Vec<u64> = (0..4).filter(|&d| is_block_owner(&m, Some(&sh), d)).collect();
        assert_eq!(owners, vec![0, 1]);
        let owners: Vec<u64> = (0..4).filter(|&d| is_block_owner(&m, None, d)).collect();
        assert_eq!(owners, vec![0]);
    }
}
