//! The learned rBRIEF pattern (Rublee et al. 2011, docs/orb-reference.md §7): 256
//! intensity tests, parsed from `bit_pattern_31.txt` when the crate compiles.

/// The learned pattern (Rublee et al. 2011): test `k` compares `(x1, y1)` with
/// `(x2, y2)` from row `k`, parsed from the text file when the crate compiles.
pub const PATTERN: [[i8; 4]; 256] = parse_pattern(include_str!("bit_pattern_31.txt"));

/// How far a rotated test point can land from the keypoint, in whole pixels:
/// `ceil` of the pattern's largest radius (`|round(v)| <= ceil(|v|)`).
pub const PATTERN_REACH: usize = pattern_reach(&PATTERN);

/// Parses 256 lines of 4 integers; any other shape fails the build.
const fn parse_pattern(text: &str) -> [[i8; 4]; 256] {
    let bytes = text.as_bytes();
    let mut pattern = [[0i8; 4]; 256];
    let mut count = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            assert!(
                count % 4 == 0,
                "bit_pattern_31.txt: a line without 4 numbers"
            );
            i += 1;
        } else if b == b' ' || b == b'\t' || b == b'\r' {
            i += 1;
        } else {
            let negative = b == b'-';
            if negative {
                i += 1;
            }
            let mut value: i32 = 0;
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                value = value * 10 + (bytes[i] - b'0') as i32;
                i += 1;
                assert!(value <= 127, "bit_pattern_31.txt: a number out of range");
            }
            assert!(i > start, "bit_pattern_31.txt: not a number");
            assert!(count < 4 * 256, "bit_pattern_31.txt: more than 256 tests");
            pattern[count / 4][count % 4] = (if negative { -value } else { value }) as i8;
            count += 1;
        }
    }
    assert!(count == 4 * 256, "bit_pattern_31.txt: fewer than 256 tests");
    pattern
}

const fn pattern_reach(pattern: &[[i8; 4]; 256]) -> usize {
    let mut largest = 0;
    let mut k = 0;
    while k < 2 * 256 {
        let (x, y) = (pattern[k / 2][2 * (k % 2)], pattern[k / 2][2 * (k % 2) + 1]);
        let squared = (x as i32 * x as i32 + y as i32 * y as i32) as usize;
        if squared > largest {
            largest = squared;
        }
        k += 1;
    }
    let mut reach = 0;
    while reach * reach < largest {
        reach += 1;
    }
    reach
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_the_learned_one() {
        // First and last rows of OpenCV's bit_pattern_31_.
        assert_eq!(PATTERN[0], [8, -3, 9, 5]);
        assert_eq!(PATTERN[255], [-1, -6, 0, -11]);
        // Pattern points lie within the 31x31 patch, so the reach is ceil(13 √2).
        assert!(PATTERN.iter().flatten().all(|&v| (-15..=15).contains(&v)));
        assert_eq!(PATTERN_REACH, 19);
    }
}
