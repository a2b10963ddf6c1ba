//! Secrets out of the gateway's own command line. `/proc/PID/cmdline` is readable by every
//! process of the machine — sandboxed tools included (Landlock allows `/proc`, and cmdline
//! has no ptrace check) — so a token given with `--token`, or a password in a `--db` address,
//! would be handed to every tool. After the arguments are parsed, each such value is
//! overwritten with `*` where the kernel keeps the command line (the process's own memory
//! between `arg_start` and `arg_end` of `/proc/self/stat`, written through
//! `/proc/self/mem`, as `setproctitle` does), and serve warns that it was given there.

use std::io::{Read, Seek, SeekFrom, Write};

/// Overwrites every occurrence of each of `secrets` in this process's command line with
/// `*`; returns how many were found. Secrets shorter than 4 bytes are left (they would match
/// ordinary words).
pub fn scrub(secrets: &[&str]) -> std::io::Result<usize> {
    let secrets: Vec<&[u8]> = secrets
        .iter()
        .map(|s| s.as_bytes())
        .filter(|s| s.len() >= 4)
        .collect();
    if secrets.is_empty() {
        return Ok(0);
    }
    let (start, end) = arg_region()?;
    // A non-dumpable process's /proc files belong to root: dumpable for as long as the open
    // takes (before any tool runs), then not again (as `main` made it).
    toolsmith_exec::set_dumpable(true).map_err(std::io::Error::other)?;
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem");
    toolsmith_exec::not_dumpable().map_err(std::io::Error::other)?;
    let mut mem = mem?;
    let mut region = vec![0u8; (end - start) as usize];
    mem.seek(SeekFrom::Start(start))?;
    mem.read_exact(&mut region)?;
    let mut found = 0;
    for secret in &secrets {
        let mut at = 0;
        while let Some(i) = find(&region[at..], secret) {
            let i = at + i;
            region[i..i + secret.len()].fill(b'*');
            found += 1;
            at = i + secret.len();
        }
    }
    if found > 0 {
        mem.seek(SeekFrom::Start(start))?;
        mem.write_all(&region)?;
    }
    Ok(found)
}

/// Where the kernel reads `/proc/self/cmdline` from: fields 48 and 49 of `/proc/self/stat`.
fn arg_region() -> std::io::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The command name (field 2) may hold spaces: count from the last `)`.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    match (field(48), field(49)) {
        (Some(start), Some(end)) if end > start && end - start < 1 << 24 => Ok((start, end)),
        _ => Err(std::io::Error::other(
            "/proc/self/stat does not say where the command line is",
        )),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The password of a `scheme://user:password@host/...` address, if it has one.
pub fn url_password(address: &str) -> Option<&str> {
    let scheme = address.find("://")?;
    let at = address.rfind('@').filter(|at| *at > scheme)?;
    address[scheme + 3..at]
        .split_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_the_command_line_is_overwritten() {
        // The test binary's own command line: its path is in it; scrubbing a part of it
        // shows in /proc/self/cmdline at once.
        let before = std::fs::read("/proc/self/cmdline").expect("cmdline");
        let first = before.split(|b| *b == 0).next().expect("argv[0]").to_vec();
        let name = String::from_utf8(first).expect("utf-8");
        let tail = &name[name.len().saturating_sub(6)..];
        assert_eq!(scrub(&[tail]).expect("scrubbed"), 1);
        let after = std::fs::read("/proc/self/cmdline").expect("cmdline");
        assert_eq!(after.len(), before.len());
        let text = String::from_utf8_lossy(&after);
        assert!(!text.contains(tail), "{text}");
        assert!(text.contains("******"), "{text}");
        assert_eq!(scrub(&["abc"]).expect("short"), 0);
    }

    #[test]
    fn passwords_are_found_in_addresses() {
        assert_eq!(url_password("postgres://u:p4ss@h/db"), Some("p4ss"));
        assert_eq!(url_password("postgres://u@h/db"), None);
        assert_eq!(url_password("/var/lib/registry.db"), None);
    }
}
