//! Reports and plots, made from plain data the commands hand in: report.html (`html`) drawn
//! with hand-written SVG charts (`svg`), a sweep's key figures (`digest`), aligned terminal
//! tables (`table`), and the one XML escaper (`xml`) that report.html and JUnit share. The
//! mechanism panels (`panels`, `levels`, on the ground of `drawn`) and the other charts over
//! time share `windows`.

pub mod digest;
pub mod drawn;
pub mod html;
pub mod levels;
pub mod panels;
pub mod parallel;
pub mod svg;
pub mod table;
#[cfg(test)]
mod tests;
pub mod windows;
pub mod xml;
