//! `doctor` without a command: what a repair would do now, the last run, the set-aside runs.

use std::path::Path;

use engine::admin::AdminError;
use fsroot::{Problem, Root};
use sessions::LastRun;
use store::ids::RunId;
use store::ids::SET_ASIDE_DIR;

use crate::repair::{absolute, open_error};
use crate::{Error, RepairOptions, RepairReport, SetAsideRun, StatusReport};

/// `doctor` without a command: what a repair would do now, the last summary, set-aside runs.
pub fn status(opts: &RepairOptions) -> Result<StatusReport, Error> {
    let config = opts.config();
    let root = Root::open(&opts.sessions_dir).map_err(|e| open_error(&opts.sessions_dir, e))?;
    let planned = engine::plan_sessions(&root, &opts.rules(), &config)?;
    let pending = RepairReport::dry(
        absolute(&opts.sessions_dir),
        RunId::new(config.now),
        planned,
    );
    let mut errors = Vec::new();
    let last_path = Path::new(store::ids::LAST_RUN_PATH);
    let last = match root.read_record(last_path) {
        // The doctor's or the app's last.json.
        Ok(b) => {
            let last = LastRun::parse(&b);
            if last.is_none() {
                let shown = root.display_path(last_path);
                errors.push(Problem::invalid_data(
                    shown.to_string_lossy(),
                    format!(
                        "{} is neither the doctor's nor the app's summary of a run: ignored",
                        shown.display()
                    ),
                ));
            }
            last
        }
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            errors.push(Problem::from(&e));
            None
        }
    };
    let mut runs = Vec::new();
    match root.list(Path::new(SET_ASIDE_DIR)) {
        Ok(entries) => {
            // The receipts say which items were taken back out of their runs.
            let restored = if entries.is_empty() {
                Default::default()
            } else {
                engine::admin::restored_items(&root, &mut errors).unwrap_or_else(|e| {
                    errors.push(Problem::from(&e));
                    Default::default()
                })
            };
            for e in entries {
                let name = e.name.to_string_lossy().into_owned();
                let items = match engine::admin::run_overview(&root, &name, &restored, &|_| {
                    String::new()
                }) {
                    Ok(o) => o.items - o.restored,
                    // Not a run id: no recorded item.
                    Err(AdminError::NoSuchRun { .. }) => 0,
                    Err(e) => {
                        errors.push(Error::from(e).problem());
                        0
                    }
                };
                runs.push(SetAsideRun { run: name, items });
            }
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => errors.push(Problem::from(&e)),
    }
    Ok(StatusReport {
        schema_version: 1,
        sessions_dir: pending.sessions_dir.clone(),
        pending_actions: pending.plan.actions.len() as u64,
        pending: pending.summary,
        last,
        set_aside_runs: runs,
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsroot::WritableRoot;

    #[test]
    fn status_reports_what_it_cannot_read_instead_of_hiding_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = WritableRoot::open(tmp.path()).unwrap();
        let mut opts = RepairOptions::new(tmp.path());
        opts.codewhale_home = None;
        opts.cache_dir = None;

        // Nothing there yet: no last run, no runs, nothing to report.
        let clean = status(&opts).unwrap();
        assert!(clean.last.is_none() && clean.set_aside_runs.is_empty());
        assert_eq!(clean.errors, Vec::<engine::Problem>::new());

        // A last.json that is neither summary, and a run whose manifest cannot be read.
        root.write_atomic(Path::new(store::ids::LAST_RUN_PATH), b"[1, 2]")
            .unwrap();
        root.create_dir_all(Path::new(&store::ids::manifest_path(
            "20261129T120000Z-a1b2c3",
        )))
        .unwrap();
        root.create_dir_all(Path::new(".set-aside/20261129T130000Z-d4e5f6"))
            .unwrap();
        let report = status(&opts).unwrap();
        assert!(report.last.is_none());
        assert_eq!(report.set_aside_runs.len(), 2, "every run is listed");
        assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
        // Paths compared by components: on Windows they are spelled with `\`.
        let named = |tail: &str| {
            report
                .errors
                .iter()
                .find(|p| Path::new(&p.path).ends_with(tail))
                .unwrap_or_else(|| panic!("an error names {tail}: {:?}", report.errors))
        };
        let last = named(".reconcile/last.json");
        named("20261129T120000Z-a1b2c3/MANIFEST.jsonl");
        assert!(last.message.contains("neither"), "{last:?}");
        assert_eq!(last.kind, std::io::ErrorKind::InvalidData, "{last:?}");

        let human = report.render_human();
        assert!(human.contains("error: "), "{human}");
    }
}
