; zig tags: definitions and references (to be written).
