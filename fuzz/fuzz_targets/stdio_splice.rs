#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_launch::fuzzing::stdio_splice(data));
