//! The report of a `tessera bench` run: `results.json`, `results.csv`, `scenario.toml`,
//! `environment.json`, `report.md`, a self-contained `report.html` and charts (SVG and PNG),
//! plus the compact table printed at the end of a run.
//!
//! Everything here reads the shared result model ([`ResultSet`]) and aggregates rounds of a cell
//! with medians ([`ResultSet::cells`], [`Cell::median`](super::results::Cell::median)); nothing
//! here measures.
//!
//! - [`write_all`] writes every file of a result directory;
//! - [`terminal_summary`] and [`markdown_tables`] give the headline tables: per experiment, one row
//!   per parameter combination, one column per pair, and the Tessera/Cyclone ratio;
//! - `ranking` orders the pairs of every latency and throughput cell that three or more
//!   measured, with ratios to the best and CPU per sample (a section of the report, and of
//!   the terminal summary).
//!
//! Charts are drawn with plotters from one figure model (`chart`) into both an SVG (inlined in
//! the HTML) and a PNG (linked from the Markdown). The PNG text uses DejaVu Sans bundled in the
//! binary (`assets/`), so rendering needs no system fonts. A chart that cannot be drawn (no data,
//! only non-positive values on a log axis, ...) is skipped, never fatal: a long run must not lose
//! its report to a plotting corner case.

mod answers;
mod chart;
mod csv;
mod doc;
mod figures;
mod glyphs;
mod ranking;
mod table;

#[cfg(test)]
mod sample;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::results::ResultSet;

pub use table::{markdown_tables, pair_display, terminal_summary};

/// Why a report could not be written.
#[derive(Debug, Error)]
pub enum ReportError {
    /// A file or directory could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The result set could not be serialised.
    #[error("cannot serialise {what}: {source}")]
    Json {
        /// What was being serialised.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    std::fs::write(path, bytes).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn create_dir(path: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes the whole report of `rs` into `dir` (created if missing): `results.json`,
/// `results.csv`, `scenario.toml` (the text given), `environment.json`, `report.md`,
/// `report.html` and `charts/*.svg` + `charts/*.png`. Returns the files written, in that order.
///
/// Charts are drawn only where the data exists; a chart that fails to draw is left out and named
/// in the report's "How measured" section instead of failing the whole report.
pub fn write_all(
    dir: &Path,
    rs: &ResultSet,
    scenario_toml: &str,
) -> Result<Vec<PathBuf>, ReportError> {
    create_dir(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| -> Result<(), ReportError> {
        let path = dir.join(name);
        write_file(&path, bytes)?;
        written.push(path);
        Ok(())
    };

    let json = serde_json::to_string_pretty(rs).map_err(|source| ReportError::Json {
        what: "results.json",
        source,
    })?;
    put("results.json", json.as_bytes())?;
    put("results.csv", csv::results_csv(rs).as_bytes())?;
    put("scenario.toml", scenario_toml.as_bytes())?;
    let env =
        serde_json::to_string_pretty(&rs.environment).map_err(|source| ReportError::Json {
            what: "environment.json",
            source,
        })?;
    put("environment.json", env.as_bytes())?;

    let figures = figures::build(rs);
    let charts_dir = dir.join("charts");
    let mut rendered = Vec::new();
    let mut chart_files = Vec::new();
    let mut failures = Vec::new();
    if !figures.is_empty() {
        create_dir(&charts_dir)?;
    }
    for fig in &figures {
        match chart::render(fig, &charts_dir) {
            Ok(r) => {
                chart_files.push(r.svg_path.clone());
                chart_files.push(r.png_path.clone());
                rendered.push(r);
            }
            Err(e) => failures.push(format!("{}: {e}", fig.name)),
        }
    }

    let md = doc::markdown(rs, &rendered, &failures);
    put("report.md", md.as_bytes())?;
    let html = doc::html(rs, &rendered, &failures);
    put("report.html", html.as_bytes())?;
    written.extend(chart_files);
    Ok(written)
}
