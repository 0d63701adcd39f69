//! observe/: how the house is seen from outside — the metrics registry and the tracing
//! exporters. Rooms record events through the small functions here; observe/ decides how they
//! are exported. It names no room but `error` (floor 1: the rooms that record use it).

pub mod trace;
