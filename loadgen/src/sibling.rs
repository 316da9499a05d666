//! The binaries loadgen runs (`tidemark`, `loadgen-bench`): beside the running executable, where
//! `cargo build` and `cargo install` put them, else by name on `PATH`.

use std::path::PathBuf;

/// `name` beside the running executable if it is there, else the bare name (looked up on
/// `PATH` when run).
pub fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(name)))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_not_beside_this_one_is_looked_up_by_name() {
        assert_eq!(
            sibling("no-such-binary-anywhere"),
            PathBuf::from("no-such-binary-anywhere")
        );
    }

    #[test]
    fn a_binary_beside_this_one_is_found_by_its_path() {
        let exe = std::env::current_exe().expect("current exe");
        let name = exe
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a name")
            .to_string();
        assert_eq!(sibling(&name), exe);
    }
}
