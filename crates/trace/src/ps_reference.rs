//! The `proc_ps.log` reader as it was before the byte-level one (session 2, when it read
//! each line with `read_until` and `String::from_utf8_lossy`), kept for tests only: the new
//! reader must give the same records and the same errors on every input.

use crate::bootchart::{ParseError, PS_MIN_FIELDS_AFTER_COMM};
use crate::writer::PsRecord;

pub(crate) fn for_each_ps_block_read(
    mut input: impl std::io::BufRead,
    mut f: impl FnMut(u64, &[PsRecord]),
) -> Result<usize, ParseError> {
    const FILE: &str = "proc_ps.log";
    let mut raw: Vec<u8> = Vec::with_capacity(512);
    let mut buf: Vec<PsRecord> = Vec::new();
    let mut line_no = 0usize;
    let mut count = 0usize;
    // The block being read: its time, records so far, the first bad line (reported at the
    // block's end unless the block turns out to be a ` not running` one) and its last line.
    let mut block: Option<u64> = None;
    let mut used = 0usize;
    let mut pending: Option<ParseError> = None;
    let mut not_running = false;
    loop {
        raw.clear();
        let n = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| ParseError::whole(FILE, format!("read error: {e}")))?;
        let at_eof = n == 0;
        if !at_eof {
            line_no += 1;
        }
        let text = String::from_utf8_lossy(&raw);
        let line = text.trim_end_matches(['\n', '\r']);
        if at_eof || line.trim().is_empty() {
            if let Some(t_cs) = block.take() {
                if !not_running {
                    if let Some(e) = pending.take() {
                        return Err(e);
                    }
                    f(t_cs, &buf[..used]);
                    count += 1;
                }
                pending = None;
            }
            if at_eof {
                return Ok(count);
            }
            continue;
        }
        match block {
            None => {
                let t_cs = line.trim().parse::<u64>().map_err(|_| {
                    ParseError::at(
                        FILE,
                        line_no,
                        format!("a time in centiseconds starting a block, found {line:?}"),
                    )
                })?;
                block = Some(t_cs);
                used = 0;
                not_running = false;
            }
            Some(_) => {
                not_running = line.trim_end().ends_with(" not running");
                if pending.is_some() || not_running {
                    continue;
                }
                if used == buf.len() {
                    buf.push(PsRecord::default());
                }
                match parse_ps_line_into(line, &mut buf[used]) {
                    Ok(()) => used += 1,
                    Err(e) => pending = Some(ParseError::at(FILE, line_no, e)),
                }
            }
        }
    }
}

pub(crate) fn parse_ps_line_into(line: &str, r: &mut PsRecord) -> Result<(), String> {
    // A byte search: `str::find` with a string pattern costs a searcher set-up per line.
    let open = line
        .as_bytes()
        .iter()
        .position(|&b| b == b'(')
        .filter(|&p| p > 0 && line.as_bytes()[p - 1] == b' ')
        .map(|p| p - 1)
        .ok_or_else(|| "`PID (comm) ...`: no ` (` after the pid".to_string())?;
    // comm is at most 64 bytes (kernel workers' long names), so the closing `)` is near the
    // start; searching back from the end would cross all the fields.
    let head = &line.as_bytes()[..line.len().min(open + 2 + 66)];
    // Android's longer names: the last `)` on the line when the window has none.
    let close = head
        .iter()
        .rposition(|&b| b == b')')
        .filter(|&c| c > open)
        .or_else(|| {
            line.as_bytes()
                .iter()
                .rposition(|&b| b == b')')
                .filter(|&c| c > open)
        })
        .ok_or_else(|| "`)` closing the command".to_string())?;
    r.pid = parse_u64(line[..open].trim().as_bytes())
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| format!("a pid at the start of the line, found {:?}", &line[..open]))?;
    r.comm.clear();
    r.comm.push_str(&line[open + 2..close]);
    r.rss = 0;
    r.blkio_ticks = 0;
    let rest = &line.as_bytes()[close + 1..];
    let bad = |field: usize, tok: &[u8]| {
        format!(
            "a number in field {field}, found {:?}",
            String::from_utf8_lossy(tok)
        )
    };
    let mut field = 2; // comm was field 2
    let mut i = 0;
    // The kernel separates fields by one space; runs of blanks are tolerated.
    let blank = |b: u8| b == b' ' || b == b'\t' || b == b'\r';
    while field < 42 {
        while i < rest.len() && blank(rest[i]) {
            i += 1;
        }
        if i == rest.len() {
            break;
        }
        let start = i;
        while i < rest.len() && !blank(rest[i]) {
            i += 1;
        }
        let tok = &rest[start..i];
        field += 1;
        let u = || parse_u64(tok).ok_or_else(|| bad(field, tok));
        let s = || parse_i64(tok).ok_or_else(|| bad(field, tok));
        match field {
            3 => r.state = tok.first().map_or('?', |&b| b as char),
            4 => r.ppid = u()?.try_into().map_err(|_| bad(field, tok))?,
            14 => r.utime = u()?,
            15 => r.stime = u()?,
            18 => r.priority = s()?,
            19 => r.nice = s()?,
            20 => r.num_threads = u()?,
            22 => r.starttime = u()?,
            24 => r.rss = u()?,
            42 => r.blkio_ticks = u()?,
            _ => {}
        }
    }
    let count = field - 2;
    if count < PS_MIN_FIELDS_AFTER_COMM {
        return Err(format!(
            "at least {PS_MIN_FIELDS_AFTER_COMM} fields after the command, found {count}"
        ));
    }
    Ok(())
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    match b.split_first() {
        Some((b'-', rest)) => parse_u64(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => parse_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}
