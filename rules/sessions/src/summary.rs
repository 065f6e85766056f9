//! The sessions pack's run summary (cli.md): counts of what was planned (dry run) or applied
//! (real run), how its parts merge, and the notice line of a real run.

use serde::{Deserialize, Serialize};

/// The `summary` object of the JSON output and of `last.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// R1 documents set aside.
    pub documents_set_aside: u64,
    /// Documents of a newer schema, kept.
    pub documents_newer_schema: u64,
    /// Documents kept because they hold a content block `type`, journal `kind` or message
    /// `role` the doctor does not know (the app may be newer than the doctor).
    #[serde(default)]
    pub documents_unknown_content: u64,
    /// Thread records that do not parse, left in place.
    pub threads_unreadable: u64,
    /// R2 stores set aside.
    pub stores_set_aside: u64,
    /// Unbound stores kept because they hold work with nothing recoverable.
    pub stores_kept_with_work: u64,
    /// Stores or sessions skipped because another process holds them.
    pub stores_in_use: u64,
    /// R3 documents written.
    pub sessions_recovered: u64,
    /// R3 bindings completed after a crash.
    pub threads_bound: u64,
    /// R4 threads unbound.
    pub threads_unbound: u64,
    /// R5 directories set aside.
    pub artifact_dirs_set_aside: u64,
    /// R5 directories kept (named or recently changed).
    pub artifact_dirs_kept: u64,
    /// Actions left for a later run by `--max-actions`.
    pub actions_deferred: u64,
    /// Whether the bound cut the plan.
    pub limit_reached: bool,
    /// Whether another run held `.reconcile.lock`.
    pub skipped_concurrent: bool,
    /// `.set-aside/<run>` when this run sets anything aside.
    pub set_aside_path: Option<String>,
    /// Errors met, each naming its path (in JSON, their messages).
    pub errors: Vec<engine::Problem>,
}

impl Summary {
    /// Items set aside, of every kind.
    pub fn items_set_aside(&self) -> u64 {
        self.documents_set_aside + self.stores_set_aside + self.artifact_dirs_set_aside
    }
}

/// Merges the counts of part of a run (a rule, the applied actions) into the whole: numbers
/// add up, errors append, flags stay set, a set-aside path given replaces none. Every field
/// is named, so a new one cannot be forgotten here.
impl std::ops::AddAssign<&Summary> for Summary {
    fn add_assign(&mut self, other: &Summary) {
        let Summary {
            documents_set_aside,
            documents_newer_schema,
            documents_unknown_content,
            threads_unreadable,
            stores_set_aside,
            stores_kept_with_work,
            stores_in_use,
            sessions_recovered,
            threads_bound,
            threads_unbound,
            artifact_dirs_set_aside,
            artifact_dirs_kept,
            actions_deferred,
            limit_reached,
            skipped_concurrent,
            set_aside_path,
            errors,
        } = other;
        self.documents_set_aside += documents_set_aside;
        self.documents_newer_schema += documents_newer_schema;
        self.documents_unknown_content += documents_unknown_content;
        self.threads_unreadable += threads_unreadable;
        self.stores_set_aside += stores_set_aside;
        self.stores_kept_with_work += stores_kept_with_work;
        self.stores_in_use += stores_in_use;
        self.sessions_recovered += sessions_recovered;
        self.threads_bound += threads_bound;
        self.threads_unbound += threads_unbound;
        self.artifact_dirs_set_aside += artifact_dirs_set_aside;
        self.artifact_dirs_kept += artifact_dirs_kept;
        self.actions_deferred += actions_deferred;
        self.limit_reached |= limit_reached;
        self.skipped_concurrent |= skipped_concurrent;
        if set_aside_path.is_some() {
            self.set_aside_path.clone_from(set_aside_path);
        }
        self.errors.extend(errors.iter().cloned());
    }
}

/// The notice line of a real run, or `None` when nothing changed.
pub fn notice_line(s: &Summary) -> Option<String> {
    let mut parts = Vec::new();
    if s.sessions_recovered > 0 {
        parts.push(format!("{} recovered", s.sessions_recovered));
    }
    // cli.md's wording: a thread unbound from a missing document (R4) and a thread bound after a
    // crash (R3's `bind_thread`) are both re-linked.
    let relinked = s.threads_bound + s.threads_unbound;
    if relinked > 0 {
        parts.push(format!(
            "{} re-linked",
            count(relinked, "thread", "threads")
        ));
    }
    let set_aside = s.items_set_aside();
    if set_aside > 0 {
        let to = s.set_aside_path.as_deref().unwrap_or(".set-aside");
        parts.push(format!(
            "{} set aside → {to}",
            count(set_aside, "unused item", "unused items")
        ));
    }
    (!parts.is_empty()).then(|| format!("Sessions repaired: {}", parts.join(", ")))
}

/// `n` and the noun in the number `n` takes: `1 thread`, `2 threads`, `0 threads`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_line_counts_in_the_right_number() {
        let one = Summary {
            sessions_recovered: 1,
            threads_unbound: 1,
            documents_set_aside: 1,
            set_aside_path: Some(".set-aside/r".into()),
            ..Summary::default()
        };
        assert_eq!(
            notice_line(&one).unwrap(),
            "Sessions repaired: 1 recovered, 1 thread re-linked, 1 unused item set aside → .set-aside/r"
        );
        let two = Summary {
            threads_bound: 1,
            threads_unbound: 1,
            stores_set_aside: 2,
            ..Summary::default()
        };
        assert_eq!(
            notice_line(&two).unwrap(),
            "Sessions repaired: 2 threads re-linked, 2 unused items set aside → .set-aside"
        );
        assert_eq!(notice_line(&Summary::default()), None);
    }

    #[test]
    fn merging_adds_every_count_and_keeps_flags_and_errors() {
        let one = Summary {
            documents_set_aside: 1,
            documents_newer_schema: 2,
            documents_unknown_content: 3,
            threads_unreadable: 4,
            stores_set_aside: 5,
            stores_kept_with_work: 6,
            stores_in_use: 7,
            sessions_recovered: 8,
            threads_bound: 9,
            threads_unbound: 10,
            artifact_dirs_set_aside: 11,
            artifact_dirs_kept: 12,
            actions_deferred: 13,
            limit_reached: true,
            skipped_concurrent: false,
            set_aside_path: Some(".set-aside/r".into()),
            errors: vec![engine::Problem::invalid_data("p", "e")],
        };
        let mut sum = Summary::default();
        sum += &one;
        sum += &one;
        sum += &Summary::default();
        let json = serde_json::to_value(&sum).unwrap();
        for (key, value) in serde_json::to_value(&one).unwrap().as_object().unwrap() {
            if let Some(n) = value.as_u64() {
                assert_eq!(json[key], n * 2, "{key}");
            }
        }
        assert!(sum.limit_reached && !sum.skipped_concurrent);
        // A flag set on either side stays set.
        let mut flags = Summary::default();
        flags += &Summary {
            skipped_concurrent: true,
            ..Summary::default()
        };
        assert!(flags.skipped_concurrent && !flags.limit_reached);
        assert_eq!(sum.set_aside_path.as_deref(), Some(".set-aside/r"));
        let messages: Vec<String> = sum.errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages, ["e", "e"]);
    }
}
