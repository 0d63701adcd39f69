//! The controllers that serve a stack's tools over HTTP behind its front: mcpo (`mcpo`, a
//! Python process of its own, supervised and restarted) or the native bridge (`native`, in this
//! process, over the preflight's sessions). A running stack holds exactly one
//! (`stack::Controller`).

pub mod mcpo;
pub mod native;
