//! Several files in one input: a trace directory, a root with init scripts, a modules
//! directory. Each file starts with a line `@@ NAME`; its contents run to the next such line
//! (the newline before it is not part of the file). Bytes before the first marker are
//! dropped. A byte mutation can so change a file, and a token mutation can add, cut or
//! duplicate one, without a binary layout that most mutations would break.

/// The marker that starts a file, at the start of the input or after a newline.
pub const MARKER: &[u8] = b"@@ ";

/// The files of a container input, in order (a name may come more than once).
pub fn split(data: &[u8]) -> Vec<(String, &[u8])> {
    let mut starts = Vec::new();
    if data.starts_with(MARKER) {
        starts.push(0);
    }
    let mut i = 0;
    while let Some(p) = find(&data[i..], b"\n@@ ") {
        starts.push(i + p + 1);
        i += p + 1;
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(data.len(), |&n| n - 1);
        let line_end = data[s..end].iter().position(|&b| b == b'\n').map(|p| s + p);
        let (name, body) = match line_end {
            Some(e) => (&data[s + MARKER.len()..e], &data[e + 1..end]),
            None => (&data[s + MARKER.len()..end], &data[end..end]),
        };
        out.push((String::from_utf8_lossy(name).trim().to_string(), body));
    }
    out
}

/// Joins files into one container input (the inverse of [`split`]).
pub fn join<N: AsRef<str>, B: AsRef<[u8]>>(files: &[(N, B)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (name, body)) in files.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(MARKER);
        out.extend_from_slice(name.as_ref().as_bytes());
        out.push(b'\n');
        out.extend_from_slice(body.as_ref());
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let files = [("header", &b"a = 1\n"[..]), ("x", b""), ("y", b"1\n\n2")];
        let joined = join(&files);
        let back = split(&joined);
        let want: Vec<(String, &[u8])> = files.iter().map(|(n, b)| (n.to_string(), *b)).collect();
        assert_eq!(back, want);
        assert!(split(b"no marker").is_empty());
        assert_eq!(split(b"@@ only"), vec![("only".to_string(), &b""[..])]);
    }
}
