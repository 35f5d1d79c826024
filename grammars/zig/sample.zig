//! A bounded ring buffer and a small tokenizer.
//! Written for lode's fixtures in the style of the Zig standard library
//! (lib/std/RingBuffer.zig, lib/std/zig/tokenizer.zig; MIT); no lines copied.

const std = @import("std");
const builtin = @import("builtin");
const mem = std.mem;
const Allocator = std.mem.Allocator;
const assert = std.debug.assert;

/// The capacity a buffer gets when none is given.
pub const default_capacity: usize = 64;

/// Largest token the tokenizer accepts, in bytes.
const max_token_len = 256;

var instances: usize = 0;

pub const Error = error{ Full, Empty };

/// A ring buffer of bytes with a fixed capacity.
pub const RingBuffer = struct {
    data: []u8,
    read_index: usize = 0,
    write_index: usize = 0,

    const Self = @This();

    /// Allocates a buffer of `capacity` bytes.
    pub fn init(allocator: Allocator, capacity: usize) Allocator.Error!Self {
        const bytes = try allocator.alloc(u8, capacity);
        instances += 1;
        return .{ .data = bytes };
    }

    /// Frees the buffer's memory.
    pub fn deinit(self: *Self, allocator: Allocator) void {
        allocator.free(self.data);
        self.* = undefined;
    }

    fn mask(self: Self, index: usize) usize {
        return index % self.data.len;
    }

    /// Whether no byte can be written.
    pub fn isFull(self: Self) bool {
        return self.len() == self.data.len;
    }

    pub fn len(self: Self) usize {
        return self.write_index - self.read_index;
    }

    /// Writes one byte, failing when the buffer is full.
    pub fn write(self: *Self, byte: u8) Error!void {
        if (self.isFull()) return Error.Full;
        self.data[self.mask(self.write_index)] = byte;
        self.write_index += 1;
    }

    /// Reads the oldest byte, or null when empty.
    pub fn read(self: *Self) ?u8 {
        if (self.len() == 0) return null;
        const byte = self.data[self.mask(self.read_index)];
        self.read_index += 1;
        return byte;
    }
};

/// What a token is.
pub const Tag = enum {
    identifier,
    number,
    string,
    operator,
    eof,

    /// The name used in error messages.
    pub fn describe(tag: Tag) []const u8 {
        return switch (tag) {
            .identifier => "an identifier",
            .number => "a number",
            .string => "a string",
            .operator => "an operator",
            .eof => "the end of input",
        };
    }
};

/// A token's value, by kind.
pub const Value = union(enum) {
    int: i64,
    text: []const u8,
    none,

    pub fn isNone(self: Value) bool {
        return self == .none;
    }
};

pub const Token = struct {
    tag: Tag,
    start: usize,
    end: usize,
};

/// Splits source text into tokens.
pub const Tokenizer = struct {
    buffer: []const u8,
    index: usize,

    /// Where a token starts after skipping whitespace.
    const State = enum { start, identifier, number };

    pub fn init(buffer: []const u8) Tokenizer {
        return .{ .buffer = buffer, .index = 0 };
    }

    /// Returns the next token; `.eof` at the end, forever.
    pub fn next(self: *Tokenizer) Token {
        var state: State = .start;
        var result = Token{ .tag = .eof, .start = self.index, .end = undefined };
        while (self.index < self.buffer.len) : (self.index += 1) {
            const c = self.buffer[self.index];
            switch (state) {
                .start => switch (c) {
                    ' ', '\n', '\t' => result.start = self.index + 1,
                    'a'...'z', 'A'...'Z', '_' => state = .identifier,
                    '0'...'9' => state = .number,
                    else => {
                        result.tag = .operator;
                        self.index += 1;
                        break;
                    },
                },
                .identifier => if (!isIdentChar(c)) {
                    result.tag = .identifier;
                    break;
                },
                .number => if (!std.ascii.isDigit(c)) {
                    result.tag = .number;
                    break;
                },
            }
        }
        // Input ended inside a token: close it.
        if (self.index == self.buffer.len and state != .start) {
            result.tag = if (state == .number) .number else .identifier;
        }
        result.end = self.index;
        assert(result.end - result.start <= max_token_len);
        return result;
    }
};

fn isIdentChar(c: u8) bool {
    return std.ascii.isAlphanumeric(c) or c == '_';
}

/// Counts the tokens of `source` (for tests and benchmarks).
pub fn countTokens(source: []const u8) usize {
    var tokenizer = Tokenizer.init(source);
    var n: usize = 0;
    while (tokenizer.next().tag != .eof) n += 1;
    return n;
}

test "ring buffer wraps around" {
    var ring = try RingBuffer.init(std.testing.allocator, 2);
    defer ring.deinit(std.testing.allocator);
    try ring.write(1);
    try ring.write(2);
    try std.testing.expectError(Error.Full, ring.write(3));
    try std.testing.expectEqual(@as(?u8, 1), ring.read());
}

test "tokenizer splits identifiers and numbers" {
    try std.testing.expectEqual(@as(usize, 3), countTokens("abc 12 +"));
    try std.testing.expect(mem.eql(u8, Tag.describe(.eof), "the end of input"));
    _ = builtin.mode;
}
