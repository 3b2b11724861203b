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

/// A file on its way into the pack: its entry (with its first-access rank) and, on
/// rotating disks, where its first range lies on the device.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The entry, with every resident range and its first-access rank.
    pub entry: Entry,
    /// Physical byte address of the first range on the device, from FIEMAP; `None` when
    /// unknown.
    pub physical: Option<u64>,
}

/// Sorts candidates into replay order. Rotating: by physical address, so the head sweeps
/// once across the disk (files without a known address keep first-access order, after the
/// others). Otherwise: first-access order, so what the boot needs first arrives first.
pub fn order(cands: &mut [Candidate], rotational: bool) {
    if rotational {
        cands.sort_by_key(|c| (c.physical.is_none(), c.physical, c.entry.first_access));
    } else {
        cands.sort_by_key(|c| c.entry.first_access);
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

/// Ranges of one file closer than this are read as one: a gap of unused pages costs its
/// transfer time, a request costs a seek (or, on a throttled or SD device, one of its few
/// requests per second). A 5400 rpm disk reads ~1 MiB in the time of one seek, an SD card
/// of class 10 (10 MB/s, ~1500 random reads/s by the A1 mark) ~7 KiB in the time of one
/// request: 32 KiB is below the disk's break-even by far and about the card's, and wastes
/// at most 8 pages of page cache per gap (docs/readahead.md, "Request-sized replay").
pub const MERGE_GAP: u64 = 32 * 1024;

/// A run of a file read as one: the pack's ranges it covers and the unused bytes between
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    /// From the first range's start to the last one's end.
    pub range: Range,
    /// Pack ranges inside it.
    pub parts: u64,
    /// Bytes of those ranges (the rest of `range` is gap).
    pub used: u64,
}

/// Merges a file's ranges (ascending, disjoint, as in a pack) across gaps of at most `gap`
/// bytes. A range that overlaps or goes backwards (a corrupt pack) starts a run of its own.
pub fn merge_gaps(ranges: &[Range], gap: u64) -> Vec<Merged> {
    let mut out: Vec<Merged> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(m) if r.offset >= m.range.end() && r.offset - m.range.end() <= gap => {
                m.range.len = r.end() - m.range.offset;
                m.parts += 1;
                m.used += r.len;
            }
            _ => out.push(Merged {
                range: *r,
                parts: 1,
                used: r.len,
            }),
        }
    }
    out
}

/// How many readahead(2) calls reading `r` in pieces of at most `request` bytes takes.
pub fn pieces(r: &Range, request: u64) -> u64 {
    r.len.div_ceil(request.max(1))
}

/// Device requests for reading `runs` (physical byte address, length) in the given order:
/// a run that begins where the one before ended continues it (the block layer merges
/// them), and every stretch is cut into pieces of at most `request` bytes.
pub fn device_requests(runs: &[(u64, u64)], request: u64) -> u64 {
    let request = request.max(1);
    let mut n = 0;
    let mut cur: Option<(u64, u64)> = None;
    for &(phys, len) in runs {
        match cur {
            Some((start, l)) if start.checked_add(l) == Some(phys) => cur = Some((start, l + len)),
            _ => {
                if let Some((_, l)) = cur {
                    n += l.div_ceil(request);
                }
                cur = Some((phys, len));
            }
        }
    }
    n + cur.map_or(0, |(_, l)| l.div_ceil(request))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(name: &str, first: u32, phys: Option<u64>, ranges: &[(u64, u64)]) -> Candidate {
        Candidate {
            entry: Entry {
                path: format!("/{name}").into(),
                size: 1 << 30,
                ranges: ranges
                    .iter()
                    .map(|&(offset, len)| Range { offset, len })
                    .collect(),
                first_access: first,
                ..Entry::default()
            },
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

    fn rs(v: &[(u64, u64)]) -> Vec<Range> {
        v.iter()
            .map(|&(offset, len)| Range { offset, len })
            .collect()
    }

    #[test]
    fn ranges_merge_across_small_gaps_only() {
        let k = 1024;
        // 0..8K, gap 8K, 16K..20K, gap 40K (too big), 60K..64K, gap 32K exactly, 96K..100K.
        let m = merge_gaps(
            &rs(&[
                (0, 8 * k),
                (16 * k, 4 * k),
                (60 * k, 4 * k),
                (96 * k, 4 * k),
            ]),
            MERGE_GAP,
        );
        assert_eq!(
            m,
            vec![
                Merged {
                    range: Range {
                        offset: 0,
                        len: 20 * k
                    },
                    parts: 2,
                    used: 12 * k
                },
                Merged {
                    range: Range {
                        offset: 60 * k,
                        len: 40 * k
                    },
                    parts: 2,
                    used: 8 * k
                },
            ]
        );
        // Gap 0 merges nothing that is apart; a corrupt overlap is not merged.
        assert_eq!(merge_gaps(&rs(&[(0, 4096), (8192, 4096)]), 0).len(), 2);
        assert_eq!(
            merge_gaps(&rs(&[(0, 8192), (4096, 4096)]), MERGE_GAP).len(),
            2
        );
        assert!(merge_gaps(&[], MERGE_GAP).is_empty());
    }

    #[test]
    fn pieces_of_the_request_size() {
        let r = Range {
            offset: 4096,
            len: 1 << 20,
        };
        assert_eq!(pieces(&r, 128 * 1024), 8);
        assert_eq!(pieces(&r, 4 << 20), 1);
        assert_eq!(pieces(&Range { offset: 0, len: 1 }, 128 * 1024), 1);
        assert_eq!(
            pieces(
                &Range {
                    offset: 0,
                    len: 129 * 1024
                },
                128 * 1024
            ),
            2
        );
    }

    #[test]
    fn adjacent_runs_make_one_request_stream() {
        let k = 1024;
        // Three runs back to back: one stretch of 96K, one request of 128K.
        assert_eq!(
            device_requests(&[(0, 32 * k), (32 * k, 32 * k), (64 * k, 32 * k)], 128 * k),
            1
        );
        // Scattered: three requests; a long run is cut by the request size.
        assert_eq!(
            device_requests(
                &[(0, 32 * k), (1 << 30, 32 * k), (64 * k, 300 * k)],
                128 * k
            ),
            5
        );
        assert_eq!(device_requests(&[], 128 * k), 0);
    }
}
