//! One file per screen, each a [`Component`](super::component::Component): its state, its
//! keys (turned into [`Action`](super::component::Action)s), its commands (the status bar and
//! the `?` help) and its drawing.

pub mod collector;
pub mod consent;
pub mod describe;
pub mod launch;
pub mod preflight;
pub mod results;
pub mod server;
