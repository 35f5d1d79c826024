; Lua tags: definitions and references (tree-sitter-lua 0.5).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Lua has no classes: a "class" or module is a table, its functions are fields. `function M.f()`
; is a function and `function M:m()` a method; both carry the table path as `@qualifier`, so their
; scope is `M` (or `a > b` for `function a.b.f()`). File-level tables built from a constructor
; (`local M = {}`, `local LEVELS = { ... }`) and UPPER_CASE locals are constants.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

; `function name() end`, `local function name() end`.
(function_declaration
  name: (identifier) @name) @definition.function

; `function M.f() end`, `function a.b.f() end`: a function stored in a table.
(function_declaration
  name: (dot_index_expression
    table: (_) @qualifier
    field: (identifier) @name)) @definition.function

; `function Cache:get(key) end`: a method (implicit `self`).
(function_declaration
  name: (method_index_expression
    table: (_) @qualifier
    method: (identifier) @name)) @definition.method

; `local f = function() end`, `M.f = function() end` at file level.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list
        .
        name: (identifier) @name)
      (expression_list
        .
        value: (function_definition)))) @definition.function)

(chunk
  (assignment_statement
    (variable_list
      .
      name: [
        (identifier) @name
        (dot_index_expression
          table: (_) @qualifier
          field: (identifier) @name)
      ])
    (expression_list
      .
      value: (function_definition))) @definition.function)

; File-level tables: `local M = {}`, `local LEVELS = { debug = 1 }`.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list
        .
        name: (identifier) @name)
      (expression_list
        .
        value: (table_constructor)))) @definition.constant)

; File-level UPPER_CASE names: `local MAX_JOBS = 16`, `M.DEFAULT_CAPACITY = 128`.
((chunk
  (variable_declaration
    (assignment_statement
      (variable_list
        .
        name: (identifier) @name)
      (expression_list
        .
        value: [
          (number)
          (string)
          (true)
          (false)
          (identifier)
          (dot_index_expression)
          (binary_expression)
          (unary_expression)
        ]))) @definition.constant)
  (#match? @name "^[A-Z][A-Z0-9_]*$"))

((chunk
  (assignment_statement
    (variable_list
      .
      name: (dot_index_expression
        table: (_) @qualifier
        field: (identifier) @name))
    (expression_list
      .
      value: [
        (number)
        (string)
        (true)
        (false)
        (table_constructor)
        (dot_index_expression)
        (binary_expression)
        (unary_expression)
      ])) @definition.constant)
  (#match? @name "^[A-Z][A-Z0-9_]*$"))

; ---------------------------------------------------------------------------------------------
; Imports: `require("pl.utils")`, `require "cjson"` -> the module name.
; ---------------------------------------------------------------------------------------------

((function_call
  name: (identifier) @_require
  arguments: (arguments
    .
    (string
      content: (string_content) @name))) @reference.import
  (#eq? @_require "require"))

; ---------------------------------------------------------------------------------------------
; Calls: `f(x)` and `string.format(...)`/`Cache.new()` (a function stored in a table) are calls;
; `obj:m()` is a method call. `require` is the import above.
; ---------------------------------------------------------------------------------------------

((function_call
  name: (identifier) @name) @reference.call
  (#not-eq? @name "require"))

(function_call
  name: (dot_index_expression
    field: (identifier) @name)) @reference.call

(function_call
  name: (method_index_expression
    method: (identifier) @name)) @reference.method_call

; Comments (`--`, `---` LDoc, `--[[ ]]` blocks), for reading a definition with the docs above it.
(comment) @comment
