//! Pure planning: resident pages into byte ranges, the replay order of files, and the byte
//! budget. No I/O here, so every rule is tested on given numbers.

use crate::pack::{Entry, Range};

/// Byte ranges covering the pages marked `true` in `resident` (one flag per page of
/// `page` bytes), adjacent pages merged; the last range ends at `size`, not past it.
pub fn ranges_from_pages(resident: &[bool], page: u64, size: u64) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for (i, _) in resident.iter().enumerate().filter(|(_, &r)| r) {
        let offset = i as u64 * page;
        if offset >= size {
            break;
        }
        let len = page.min(size - offset);
        match out.last_mut() {
            Some(last) if last.end() == offset => last.len += len,
            _ => out.push(Range { offset, len }),
        }
    }
    out
}

/// A file on its way into the pack: its entry, when it was first opened during the learned
/// boot, and (on rotating disks) where its first range lies on the device.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The entry, with every resident range.
    pub entry: Entry,
    /// Rank of the first access (0 = first file the boot opened).
    pub first_access: usize,
    /// Physical byte address of the first range on the device, from FIEMAP; `None` when
    /// unknown.
    pub physical: Option<u64>,
}

/// Sorts candidates into replay order. Rotating: by physical address, so the head sweeps
/// once across the disk (files without a known address keep first-access order, after the
/// others). Otherwise: first-access order, so what the boot needs first arrives first.
pub fn order(cands: &mut [Candidate], rotational: bool) {
    if rotational {
        cands.sort_by_key(|c| (c.physical.is_none(), c.physical, c.first_access));
    } else {
        cands.sort_by_key(|c| c.first_access);
    }
}

/// Cuts the ordered candidates to at most `budget` bytes of ranges: ranges are taken in
/// order; the range that crosses the budget is shortened to a whole number of pages; the
/// rest is dropped. Entries left with no range are dropped.
pub fn apply_budget(cands: Vec<Candidate>, budget: u64, page: u64) -> Vec<Entry> {
    let mut left = budget;
    let mut out = Vec::new();
    for c in cands {
        let mut e = c.entry;
        let mut kept = Vec::new();
        let mut full = false;
        for r in e.ranges {
            if r.len <= left {
                left -= r.len;
                kept.push(r);
            } else {
                let len = left / page * page;
                if len > 0 {
                    kept.push(Range {
                        offset: r.offset,
                        len,
                    });
                }
                full = true;
                break;
            }
        }
        if !kept.is_empty() {
            e.ranges = kept;
            out.push(e);
        }
        if full {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(name: &str, first: usize, phys: Option<u64>, ranges: &[(u64, u64)]) -> Candidate {
        Candidate {
            entry: Entry {
                path: format!("/{name}").into(),
                size: 1 << 30,
                ranges: ranges
                    .iter()
                    .map(|&(offset, len)| Range { offset, len })
                    .collect(),
                ..Entry::default()
            },
            first_access: first,
            physical: phys,
        }
    }

    fn names(c: &[Candidate]) -> Vec<String> {
        c.iter()
            .map(|c| c.entry.path.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn pages_merge_into_ranges_and_stop_at_the_size() {
        let r = ranges_from_pages(&[true, true, false, true, false, false, true], 4096, 26000);
        assert_eq!(
            r,
            vec![
                Range {
                    offset: 0,
                    len: 8192
                },
                Range {
                    offset: 12288,
                    len: 4096
                },
                Range {
                    offset: 24576,
                    len: 26000 - 24576
                },
            ]
        );
        assert!(ranges_from_pages(&[false, false], 4096, 8192).is_empty());
        assert!(ranges_from_pages(&[], 4096, 0).is_empty());
    }

    #[test]
    fn rotating_orders_by_physical_address_unknown_last() {
        let mut c = vec![
            cand("a", 0, Some(9_000_000), &[(0, 4096)]),
            cand("b", 1, None, &[(0, 4096)]),
            cand("c", 2, Some(4096), &[(0, 4096)]),
            cand("d", 3, Some(500_000), &[(0, 4096)]),
            cand("e", 4, None, &[(0, 4096)]),
        ];
        order(&mut c, true);
        assert_eq!(names(&c), ["/c", "/d", "/a", "/b", "/e"]);
    }

    #[test]
    fn solid_state_orders_by_first_access() {
        let mut c = vec![
            cand("a", 2, Some(1), &[(0, 4096)]),
            cand("b", 0, Some(3), &[(0, 4096)]),
            cand("c", 1, Some(2), &[(0, 4096)]),
        ];
        order(&mut c, false);
        assert_eq!(names(&c), ["/b", "/c", "/a"]);
    }

    #[test]
    fn budget_is_never_exceeded() {
        let c = || {
            vec![
                cand("a", 0, None, &[(0, 8192), (16384, 4096)]),
                cand("b", 1, None, &[(0, 40960)]),
                cand("c", 2, None, &[(0, 4096)]),
            ]
        };
        let all: u64 = 8192 + 4096 + 40960 + 4096;
        let total = |e: &[Entry]| e.iter().map(Entry::bytes).sum::<u64>();
        assert_eq!(total(&apply_budget(c(), u64::MAX, 4096)), all);
        assert_eq!(total(&apply_budget(c(), all, 4096)).min(all), all);
        for budget in [0, 1, 4095, 4096, 8192, 12287, 12288, 20000, 53248, 57343] {
            let e = apply_budget(c(), budget, 4096);
            assert!(total(&e) <= budget, "budget {budget}: {}", total(&e));
            assert!(
                budget - total(&e) < 4096 || total(&e) == all,
                "budget {budget} underused"
            );
            assert!(e.iter().all(|e| !e.ranges.is_empty()));
        }
        // The crossing range is cut to whole pages and nothing after it is taken.
        let e = apply_budget(c(), 20000, 4096);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[1].ranges,
            vec![Range {
                offset: 0,
                len: 4096
            }]
        );
    }
}
