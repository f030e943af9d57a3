//! The second half of the bounding pass (`scan.rs`): depth, expanded size and paths over the
//! container graph, and the patched stream for serde-pickle.

use std::collections::HashMap;

use super::MeasuredError;
use super::scan::{Child, Item, MAX_DEPTH, MAX_EXPANDED, Machine, bad};

/// Most bytes the patch may add.
const MAX_PATCH: u64 = 256 * 1024 * 1024;

pub(super) fn patch(data: &[u8], m: &Machine, paths: &Paths) -> Result<Vec<u8>, MeasuredError> {
    let mut count: HashMap<u64, u64> = paths.leaves.clone();
    for (key, obj) in &m.memo_objs {
        let p = paths.objs.get(*obj as usize).copied().unwrap_or(0);
        let e = count.entry(*key).or_insert(0);
        *e = e.saturating_add(p);
    }
    let total: u64 = m
        .puts
        .iter()
        .map(|(_, k)| count.get(k).copied().unwrap_or(0))
        .sum();
    if total.saturating_mul(6) > MAX_PATCH {
        return Err(MeasuredError::TooLarge(
            "too many shared entries".to_owned(),
        ));
    }
    let mut out = Vec::with_capacity(data.len() + (total * 6) as usize);
    let mut from = 0;
    for (pos, key) in &m.puts {
        out.extend_from_slice(data.get(from..*pos).unwrap_or_default());
        from = *pos;
        let Ok(k) = u32::try_from(*key) else {
            return Err(bad("memo index out of range"));
        };
        // Takes the count from `count` so a key stored twice is raised once.
        for _ in 0..count.remove(key).unwrap_or(0) {
            out.push(b'j');
            out.extend_from_slice(&k.to_le_bytes());
            out.push(b'0');
        }
    }
    out.extend_from_slice(data.get(from..).unwrap_or_default());
    Ok(out)
}

/// How many paths from the root lead to each container and to each memoised scalar.
pub(super) struct Paths {
    objs: Vec<u64>,
    leaves: HashMap<u64, u64>,
}

/// Depth and expanded size of `root`, by an iterative depth-first walk (no recursion), then the
/// number of paths to every node in topological order; a cycle is an error (serde-pickle cannot
/// build one either).
pub(super) fn measure(objs: &[(u64, Vec<Child>)], root: Item) -> Result<Paths, MeasuredError> {
    let Item::Obj(root) = root else {
        return Err(bad("the top level is not a dict"));
    };
    // 0 = unseen, 1 = on the path, 2 = done.
    let mut state = vec![0u8; objs.len()];
    let mut done: Vec<(u32, u64)> = vec![(0, 0); objs.len()];
    let mut path: Vec<(u32, usize)> = vec![(root, 0)];
    let mut order: Vec<u32> = Vec::new();
    while let Some(&mut (id, ref mut next)) = path.last_mut() {
        let (own, children) = &objs[id as usize];
        state[id as usize] = 1;
        if let Some(&child) = children.get(*next) {
            *next += 1;
            let Child::Obj(c) = child else {
                continue;
            };
            match state[c as usize] {
                1 => return Err(bad("a container holds itself")),
                0 => {
                    if path.len() as u32 >= MAX_DEPTH {
                        return Err(MeasuredError::TooLarge(format!(
                            "nested deeper than {MAX_DEPTH} levels"
                        )));
                    }
                    path.push((c, 0));
                }
                _ => {}
            }
            continue;
        }
        let mut depth = 1u32;
        let mut size = *own;
        for c in children.iter().filter_map(|c| match c {
            Child::Obj(c) => Some(*c),
            Child::Leaf(_) => None,
        }) {
            let (d, s) = done[c as usize];
            depth = depth.max(d + 1);
            size = size.saturating_add(s);
        }
        if depth > MAX_DEPTH {
            return Err(MeasuredError::TooLarge(format!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        if size > MAX_EXPANDED {
            return Err(MeasuredError::TooLarge(format!(
                "it would expand to more than {:.1} GB in memory",
                MAX_EXPANDED as f64 / 1e9
            )));
        }
        done[id as usize] = (depth, size);
        state[id as usize] = 2;
        order.push(id);
        path.pop();
    }
    let mut paths = Paths {
        objs: vec![0; objs.len()],
        leaves: HashMap::new(),
    };
    paths.objs[root as usize] = 1;
    // Reverse post-order is a topological order of the DAG.
    for id in order.into_iter().rev() {
        let p = paths.objs[id as usize];
        for c in &objs[id as usize].1 {
            match *c {
                Child::Obj(c) => paths.objs[c as usize] = paths.objs[c as usize].saturating_add(p),
                Child::Leaf(k) => {
                    let e = paths.leaves.entry(k).or_insert(0);
                    *e = e.saturating_add(p);
                }
            }
        }
    }
    Ok(paths)
}
