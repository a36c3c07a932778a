//! Aligned text columns, as the table output of `translate` and `cutover`
//! prints them (docs/operations.md).

use std::fmt::Write as _;

/// Writes `headers` and then each of `rows` to `out`, one line each, the
/// columns two spaces apart and padded to their widest cell: right-aligned
/// where `right(column)` says so (numbers), left-aligned otherwise, with the
/// trailing spaces of each line trimmed.
pub(super) fn write_columns<const N: usize>(
    out: &mut String,
    headers: [&str; N],
    rows: &[[String; N]],
    right: impl Fn(usize) -> bool,
) {
    let mut widths = headers.map(str::len);
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let line = |out: &mut String, cols: [&str; N]| {
        let start = out.len();
        for (i, (c, w)) in cols.iter().zip(widths).enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            if right(i) {
                let _ = write!(out, "{c:>w$}");
            } else {
                let _ = write!(out, "{c:<w$}");
            }
        }
        let kept = out[start..].trim_end().len();
        out.truncate(start + kept);
        out.push('\n');
    };
    line(out, headers);
    for row in rows {
        line(out, row.each_ref().map(String::as_str));
    }
}

#[cfg(test)]
mod tests {
    use super::write_columns;

    #[test]
    fn columns_are_padded_aligned_and_trimmed() {
        let mut out = String::from("# title\n");
        let rows = [
            ["a".to_string(), "7".to_string(), String::new()],
            ["long".to_string(), "123".to_string(), "x".to_string()],
        ];
        write_columns(&mut out, ["NAME", "N", "NOTE"], &rows, |i| i == 1);
        assert_eq!(out, "# title\nNAME    N  NOTE\na       7\nlong  123  x\n");
    }
}
