//! HTTP answers as the tests and the bench read them: the daemon streams
//! `/metrics`, chunked when the request is HTTP/1.1 (docs/operations.md).

/// A chunked HTTP body decoded, or `None` if it is malformed, cut before its
/// last chunk, or followed by anything but the final CRLF (the daemon sends no
/// trailers).
pub fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size, 16).ok()?;
        if size == 0 {
            return (after == "\r\n").then_some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::dechunk;

    #[test]
    fn a_chunked_body_is_decoded_and_a_cut_one_refused() {
        assert_eq!(
            dechunk("3\r\nabc\r\na\r\n0123456789\r\n0\r\n\r\n").as_deref(),
            Some("abc0123456789")
        );
        assert_eq!(dechunk("3\r\nabc\r\n"), None);
        assert_eq!(dechunk("3\r\nab"), None);
        assert_eq!(dechunk("3\r\nabc\r\n0\r\n\r\nmore"), None);
        assert_eq!(dechunk("x\r\n"), None);
    }
}
