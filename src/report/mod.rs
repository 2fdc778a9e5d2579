//! Rendering of results for people: terminal tables, the self-contained
//! HTML report with SVG charts, CSV, Markdown, comparisons across runs, and
//! fio JSON import/export. Report code never measures.

pub mod act_terminal;
pub mod analysis_text;
pub mod charts;
pub mod compare;
pub mod csv;
pub mod device_plan;
pub mod fio_json;
pub mod fio_log;
pub mod formats;
pub mod headline_figure;
pub mod hosts_table;
pub mod html;
pub mod kv_intel;
pub mod kv_terminal;
pub mod markdown;
pub mod media_terminal;
pub mod observer;
pub mod oltp_terminal;
pub mod remote_errors;
pub mod remote_terminal;
pub mod summary;
pub mod svg;
pub mod terminal;
pub mod trace_terminal;
