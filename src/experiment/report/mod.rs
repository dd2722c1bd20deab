//! Reports and plots, made from plain data the commands hand in: report.html (`html`) drawn
//! with hand-written SVG charts (`svg`), a sweep's key figures (`digest`), aligned terminal
//! tables (`table`), and the one XML escaper (`xml`) that report.html and JUnit share.

pub mod digest;
pub mod html;
pub mod parallel;
pub mod svg;
pub mod table;
pub mod xml;
