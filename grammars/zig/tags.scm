; Zig tags: definitions and references (tree-sitter-zig 1.1).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Zig types are values: `const Point = struct { ... };` is a struct definition spanning the whole
; declaration, and the functions inside it become its methods by nesting. Unions and opaque types
; are structs here, error sets enums. Other container-level `const`s are constants and `var`s
; variables; `const std = @import("std");` is an import, not a constant. `test "name" { }` is a
; function named by its string.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(variable_declaration
  (identifier) @name
  [
    (struct_declaration)
    (union_declaration)
    (opaque_declaration)
  ]) @definition.struct

(variable_declaration
  (identifier) @name
  [
    (enum_declaration)
    (error_set_declaration)
  ]) @definition.enum

(function_declaration
  name: (identifier) @name) @definition.function

; `test "ring buffer wraps around" { }`, `test parse { }` (a doctest of `parse`).
(test_declaration
  [
    (string
      (string_content) @name)
    (identifier) @name
  ]) @definition.function

; Container-level (file or type body) `const`s that are not types or imports. The value's text
; tells a type or an import apart: the grammar gives the value no field name to match its kind on.
([
  (source_file
    (variable_declaration
      "const"
      .
      (identifier) @name
      (_) @_value .) @definition.constant)
  (struct_declaration
    (variable_declaration
      "const"
      .
      (identifier) @name
      (_) @_value .) @definition.constant)
  (enum_declaration
    (variable_declaration
      "const"
      .
      (identifier) @name
      (_) @_value .) @definition.constant)
  (union_declaration
    (variable_declaration
      "const"
      .
      (identifier) @name
      (_) @_value .) @definition.constant)
]
  (#not-match? @_value "^(extern |packed )?(struct|enum|union|opaque|error)[ ({]|^@import"))

; Container-level `var`s: global mutable state.
[
  (source_file
    (variable_declaration
      "var"
      .
      (identifier) @name) @definition.variable)
  (struct_declaration
    (variable_declaration
      "var"
      .
      (identifier) @name) @definition.variable)
]

; Struct and union fields; an enum's values.
(container_field
  name: (identifier) @name) @definition.field

(enum_declaration
  (container_field
    type: (identifier) @name) @definition.field)

; ---------------------------------------------------------------------------------------------
; Imports: `@import("std")` -> `std`, `@import("Tokenizer.zig")` -> `Tokenizer.zig`.
; ---------------------------------------------------------------------------------------------

((builtin_function
  (builtin_identifier) @_import
  (arguments
    (string
      (string_content) @name))) @reference.import
  (#eq? @_import "@import"))

; ---------------------------------------------------------------------------------------------
; Calls: `f(x)` is a call; `obj.m()` and `ns.f()` (Zig cannot tell them apart without types) are
; method calls.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    member: (identifier) @name)) @reference.method_call

; tree-sitter-zig 1.1 parses a negated call `!isIdentChar(c)` as the call of an error union type
; `!isIdentChar`; the called name is still the identifier.
(call_expression
  function: (error_union_type
    ok: (identifier) @name)) @reference.call

; ---------------------------------------------------------------------------------------------
; Type references: named types of fields, parameters, return values and variables (also behind
; `*`, `?`, `[]`, `!`), and struct literals `Token{ ... }`. Builtin types (`u8`, `usize`) are their
; own node kind and never captured.
; ---------------------------------------------------------------------------------------------

[
  (_
    type: (identifier) @name)
  (_
    type: (field_expression
      member: (identifier) @name))
  (pointer_type
    (identifier) @name)
  (nullable_type
    (identifier) @name)
  (slice_type
    (identifier) @name)
  (array_type
    (identifier) @name)
  (_
    type: (error_union_type
      ok: (identifier) @name))
  (_
    type: (error_union_type
      error: [
        (identifier) @name
        (field_expression
          member: (identifier) @name)
      ]))
  (struct_initializer
    .
    (identifier) @name)
] @reference.type

; Comments (`//`, `///` docs, `//!` file docs), for reading a definition with the docs above it.
(comment) @comment
