//! Rendering of results for people: terminal tables now; HTML, CSV and
//! comparisons build on the same model. Report code never measures.

pub mod terminal;
