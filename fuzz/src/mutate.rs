//! The input generator: deterministic from a seed and an input number, so a failing input
//! can be made again from its number alone, and the same run always makes the same inputs.
//!
//! Most inputs are seeds with a few stacked mutations (bit flips, bytes set, inserted or
//! deleted, chunks duplicated or repeated, splices with another seed, truncation, lines
//! repeated or dropped, numbers replaced by edge values, tokens of the format inserted,
//! integers overwritten in binary); some are a seed spliced with another; some are built by
//! the target's `arbitrary`-driven generator; a few are a soup of the format's tokens.

use arbitrary::Unstructured;

use crate::Target;

/// SplitMix64: small, fast, and good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A length biased towards small values, at most `max`.
    pub fn small_len(&mut self, max: usize) -> usize {
        let bits = self
            .below(usize::BITS as usize - max.leading_zeros() as usize + 1)
            .min(63);
        let v = self.next_u64() as usize & ((1usize << bits) - 1);
        v.min(max)
    }
}

/// FNV-1a, to derive per-target seeds and name crash files.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The generator's state for one target: its seeds and tokens.
pub struct Generator {
    seeds: Vec<Vec<u8>>,
    tokens: Vec<Vec<u8>>,
    structured: Option<crate::Structured>,
    base: u64,
    /// The largest input made.
    pub max_len: usize,
}

/// Values that break parsers of numbers: limits of every width, signs, exponents.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "+1",
    "127",
    "128",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "1e308",
    "1e309",
    "-1e308",
    "1e-320",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "1.5",
    "0.0000001",
    "_",
    "1_000",
];

/// Bytes and strings that every text format here treats specially somewhere.
const COMMON: &[&str] = &[
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\0",
    " ",
    "\t",
    "  ",
    "=",
    ":",
    "#",
    "%",
    "%zz",
    "%00",
    "%0A",
    "\"",
    "'",
    "\\",
    "[",
    "]",
    "(",
    ")",
    ",",
    "/",
    "..",
    "$",
    "+",
    "-",
    "*",
    "?",
    "@@ ",
    "\u{feff}",
    "\u{fffd}",
    "é",
    "\u{10ffff}",
];

impl Generator {
    /// The generator of `target` under run seed `seed`.
    pub fn new(target: &Target, seed: u64, max_len: usize) -> Generator {
        let mut seeds = (target.seeds)();
        if seeds.is_empty() {
            seeds.push(Vec::new());
        }
        let mut tokens: Vec<Vec<u8>> = target
            .tokens
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        tokens.extend(NUMBERS.iter().map(|t| t.as_bytes().to_vec()));
        tokens.extend(COMMON.iter().map(|t| t.as_bytes().to_vec()));
        Generator {
            seeds,
            tokens,
            structured: target.structured,
            base: seed ^ fnv(target.name.as_bytes()),
            max_len,
        }
    }

    /// The seeds (unmutated inputs).
    pub fn seeds(&self) -> &[Vec<u8>] {
        &self.seeds
    }

    /// Input number `index`: the seeds first, then generated ones.
    pub fn input(&self, index: u64) -> Vec<u8> {
        if let Some(s) = usize::try_from(index).ok().and_then(|i| self.seeds.get(i)) {
            return s.clone();
        }
        let mut rng = Rng::new(self.base ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
        let mut out = match rng.below(100) {
            0..=11 if self.structured.is_some() => self.structured(&mut rng),
            0..=2 => self.soup(&mut rng),
            _ => self.seeds[rng.below(self.seeds.len())].clone(),
        };
        let rounds = 1 + rng.small_len(15);
        for _ in 0..rounds {
            self.mutate(&mut rng, &mut out);
            if out.len() > self.max_len {
                out.truncate(self.max_len);
            }
        }
        out
    }

    fn structured(&self, rng: &mut Rng) -> Vec<u8> {
        let len = 16 + rng.small_len(1 << 14);
        let raw: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let mut u = Unstructured::new(&raw);
        let make = self.structured.expect("checked by the caller");
        make(&mut u).unwrap_or_default()
    }

    fn soup(&self, rng: &mut Rng) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..rng.small_len(200) {
            out.extend_from_slice(&self.tokens[rng.below(self.tokens.len())]);
            if rng.one_in(3) {
                out.push(if rng.one_in(2) { b' ' } else { b'\n' });
            }
        }
        out
    }

    fn token<'a>(&'a self, rng: &mut Rng) -> &'a [u8] {
        &self.tokens[rng.below(self.tokens.len())]
    }

    /// One mutation of `data`, in place.
    pub fn mutate(&self, rng: &mut Rng, data: &mut Vec<u8>) {
        let len = data.len();
        let pos = rng.below(len + 1);
        match rng.below(16) {
            // Flip a bit.
            0 if len > 0 => {
                let p = rng.below(len);
                data[p] ^= 1 << rng.below(8);
            }
            // Set a byte to a random or special value.
            1 if len > 0 => {
                let p = rng.below(len);
                data[p] = match rng.below(4) {
                    0 => rng.next_u64() as u8,
                    _ => [
                        0u8, 0xff, 0x7f, 0x80, b'\n', b' ', b'0', b'9', b'(', b')', b'=', b':',
                    ][rng.below(12)],
                };
            }
            // Insert random bytes.
            2 => {
                let n = 1 + rng.small_len(32);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                data.splice(pos..pos, bytes);
            }
            // Delete a range.
            3 if len > 0 => {
                let n = 1 + rng.small_len(len - pos.min(len - 1) - 1);
                let p = pos.min(len - 1);
                data.drain(p..(p + n).min(len));
            }
            // Duplicate a chunk, or repeat it many times (deeply repeated keys and lines).
            4 if len > 0 => {
                let p = rng.below(len);
                let n = 1 + rng.small_len((len - p).min(4096) - 1);
                let chunk = data[p..p + n].to_vec();
                let times = if rng.one_in(4) {
                    1 + rng.small_len(2000)
                } else {
                    1
                };
                let at = rng.below(len + 1);
                let mut rep = Vec::with_capacity(chunk.len() * times);
                for _ in 0..times {
                    rep.extend_from_slice(&chunk);
                    if rep.len() > self.max_len {
                        break;
                    }
                }
                data.splice(at..at, rep);
            }
            // Insert a token of the format, a number or a special string.
            5 | 6 => {
                let t = self.token(rng).to_vec();
                data.splice(pos..pos, t);
            }
            // Replace a run of digits by an edge value.
            7 => {
                if let Some((s, e)) = digit_run(data, pos) {
                    let t = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
                    data.splice(s..e, t);
                } else {
                    let t = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
                    data.splice(pos..pos, t);
                }
            }
            // Truncate.
            8 if len > 0 => data.truncate(rng.below(len)),
            // Splice: a chunk of another seed in place of a range.
            9 => {
                let other = &self.seeds[rng.below(self.seeds.len())];
                if !other.is_empty() {
                    let s = rng.below(other.len());
                    let n = 1 + rng.small_len(other.len() - s - 1);
                    let cut = rng.small_len(len - pos);
                    data.splice(pos..pos + cut, other[s..s + n].iter().copied());
                }
            }
            // Repeat a line many times, drop a line, or swap two lines.
            10 | 11 => line_op(rng, data, self.max_len),
            // Overwrite an integer in binary, for the binary formats.
            12 if len > 0 => {
                let width = [1usize, 2, 4, 8][rng.below(4)];
                let p = rng.below(len);
                let v: u64 = match rng.below(8) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => 1 << rng.below(64),
                    3 => (1 << rng.below(64)) - 1,
                    4 => len as u64 + rng.below(16) as u64,
                    5 => rng.below(64) as u64,
                    _ => rng.next_u64(),
                };
                let bytes = v.to_le_bytes();
                for (k, b) in bytes.iter().take(width).enumerate() {
                    if let Some(d) = data.get_mut(p + k) {
                        *d = *b;
                    }
                }
            }
            // A very long line.
            13 => {
                let n = 1 + rng.small_len(1 << 16);
                let b = [b'a', b'0', b' ', b'(', b'/', b'%'][rng.below(6)];
                data.splice(pos..pos, std::iter::repeat_n(b, n));
            }
            // Add or remove an arithmetic step on one digit (near-valid numbers).
            14 if len > 0 => {
                let p = rng.below(len);
                data[p] = data[p].wrapping_add(if rng.one_in(2) { 1 } else { 0xff });
            }
            // Splice two seeds: the start of one, the end of another.
            _ => {
                let other = &self.seeds[rng.below(self.seeds.len())];
                let s = rng.below(other.len() + 1);
                data.truncate(pos);
                data.extend_from_slice(&other[s..]);
            }
        }
    }
}

/// The run of ASCII digits at or after `pos` (up to 64 bytes ahead).
fn digit_run(data: &[u8], pos: usize) -> Option<(usize, usize)> {
    let end = (pos + 64).min(data.len());
    let s = (pos..end).find(|&i| data[i].is_ascii_digit())?;
    let e = (s..data.len())
        .find(|&i| !data[i].is_ascii_digit())
        .unwrap_or(data.len());
    Some((s, e))
}

fn line_op(rng: &mut Rng, data: &mut Vec<u8>, max_len: usize) {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            data.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i < data.len())
        .collect();
    if starts.is_empty() {
        return;
    }
    let line = |k: usize, data: &[u8]| -> (usize, usize) {
        let s = starts[k];
        let e = data[s..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(data.len(), |p| s + p + 1);
        (s, e)
    };
    let k = rng.below(starts.len());
    let (s, e) = line(k, data);
    match rng.below(3) {
        0 => {
            let l = data[s..e].to_vec();
            let times = 1 + rng.small_len(4000);
            let mut rep = Vec::new();
            for _ in 0..times {
                rep.extend_from_slice(&l);
                if !l.ends_with(b"\n") {
                    rep.push(b'\n');
                }
                if rep.len() > max_len {
                    break;
                }
            }
            data.splice(e..e, rep);
        }
        1 => {
            data.drain(s..e);
        }
        _ => {
            let k2 = rng.below(starts.len());
            let (s2, e2) = line(k2, data);
            if e <= s2 || e2 <= s {
                let (a, b) = if s < s2 {
                    ((s, e), (s2, e2))
                } else {
                    ((s2, e2), (s, e))
                };
                let first = data[a.0..a.1].to_vec();
                let second = data[b.0..b.1].to_vec();
                data.splice(b.0..b.1, first);
                data.splice(a.0..a.1, second);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_deterministic_and_bounded() {
        let t = crate::target("trace_events").unwrap();
        let g = Generator::new(&t, 7, 1 << 16);
        let h = Generator::new(&t, 7, 1 << 16);
        for i in 0..2000 {
            let a = g.input(i);
            assert_eq!(a, h.input(i));
            assert!(a.len() <= 1 << 16);
        }
        assert_ne!(g.input(100), Generator::new(&t, 8, 1 << 16).input(100));
    }
}
