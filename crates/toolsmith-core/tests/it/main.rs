//! toolsmith-core's integration tests: catalog in → tools, arguments, argv and rendered JSON
//! out. One test binary, one module per feature.

mod agent;
mod catalog;
mod guard;
mod hostile;
mod pipeline;
mod plan;
mod render;
mod rules;
mod support;
