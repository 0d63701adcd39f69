//! One file per screen: its view state, its keys and its drawing.

pub mod collector;
pub mod describe;
pub mod launch;
pub mod preflight;
pub mod results;
pub mod server;
