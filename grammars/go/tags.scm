; Go tags: definitions and references (tree-sitter-go 0.25).
;
; Convention (see server/index/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
;
; Go methods are declared outside their type, so a method's scope is empty (not the receiver type).
; The package clause is not a definition.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  name: (field_identifier) @name) @definition.method

; `type X struct {...}` -> struct, `type X interface {...}` -> interface, any other `type X T` -> type.
(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.struct

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: [
    (array_type) (channel_type) (function_type) (generic_type) (map_type) (negated_type)
    (parenthesized_type) (pointer_type) (qualified_type) (slice_type) (type_identifier)
  ]) @definition.type

; `type Key = string`.
(type_alias
  name: (type_identifier) @name) @definition.type

; Interface methods.
(method_elem
  name: (field_identifier) @name) @definition.method

; Struct fields, constants and package-level variables. One spec can declare several names
; (`hits, misses int`, `const a, b = 1, 2`), so each definition spans its name only: sibling names
; must not share a range, or the later one would be nested in the earlier one's scope.
(field_declaration
  name: (field_identifier) @name @definition.field)

; The names are the spec's direct identifier children (the value is an expression_list, the type
; a type node). In const_spec the `name:` field also holds the commas, and a `name:` pattern
; finds only the first of several names, so the field is not used.
(const_spec
  (identifier) @name @definition.constant)

(source_file
  (var_declaration
    [
      (var_spec
        (identifier) @name @definition.variable)
      (var_spec_list
        (var_spec
          (identifier) @name @definition.variable))
    ]))

; A function literal bound to one new name: `writeErr := func(w io.Writer) {...}`.
(short_var_declaration
  left: (expression_list
    .
    (identifier) @name
    .)
  right: (expression_list
    .
    (func_literal)
    .)) @definition.function

; ---------------------------------------------------------------------------------------------
; Calls. `f()` is a call. For `x.F()` the syntax cannot tell a package-qualified call from a method
; call: an identifier operand with a capitalised name (`fmt.Println`, `errors.New`, also
; `w.Write`) counts as a call of `F`; a lower-case name on an identifier (`c.now()`, which can
; only be a method or a func-valued field) and any selector on a longer expression
; (`c.mu.Lock()`, `f().Do()`) count as method calls.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: [
    (identifier) @name
    (parenthesized_expression
      (identifier) @name)
    ; Explicit instantiation: `Map[int](xs)`.
    (index_expression
      operand: (identifier) @name)
  ]) @reference.call

((call_expression
  function: (selector_expression
    operand: (identifier)
    field: (field_identifier) @name)) @reference.call
  (#match? @name "^[A-Z]"))

((call_expression
  function: (selector_expression
    operand: (identifier)
    field: (field_identifier) @name)) @reference.method_call
  (#not-match? @name "^[A-Z]"))

(call_expression
  function: (selector_expression
    operand: [
      (call_expression) (composite_literal) (func_literal) (index_expression)
      (interpreted_string_literal) (parenthesized_expression) (raw_string_literal)
      (selector_expression) (slice_expression) (type_assertion_expression)
      (type_conversion_expression) (type_instantiation_expression) (unary_expression)
    ]
    field: (field_identifier) @name)) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Imports: the import path without quotes (`"net/http"` -> `net/http`), whatever the local name.
; ---------------------------------------------------------------------------------------------

(import_spec
  path: (interpreted_string_literal
    (interpreted_string_literal_content) @name)) @reference.import

; ---------------------------------------------------------------------------------------------
; Type references: a named type in any type position (`pkg.T` gives `T`). Every position is listed,
; so a type's own name in its declaration is never captured. Predeclared types (`int`, `string`,
; `error`, `any`, ...) are skipped, as primitive types are in the other languages.
; ---------------------------------------------------------------------------------------------

([
  (argument_list (type_identifier) @name)
  (argument_list (qualified_type name: (type_identifier) @name))
  (array_type element: (type_identifier) @name)
  (array_type element: (qualified_type name: (type_identifier) @name))
  (channel_type value: (type_identifier) @name)
  (channel_type value: (qualified_type name: (type_identifier) @name))
  (composite_literal type: (type_identifier) @name)
  (composite_literal type: (qualified_type name: (type_identifier) @name))
  (const_spec type: (type_identifier) @name)
  (const_spec type: (qualified_type name: (type_identifier) @name))
  (field_declaration type: (type_identifier) @name)
  (field_declaration type: (qualified_type name: (type_identifier) @name))
  (func_literal result: (type_identifier) @name)
  (func_literal result: (qualified_type name: (type_identifier) @name))
  (function_declaration result: (type_identifier) @name)
  (function_declaration result: (qualified_type name: (type_identifier) @name))
  (function_type result: (type_identifier) @name)
  (function_type result: (qualified_type name: (type_identifier) @name))
  (generic_type type: (type_identifier) @name)
  (generic_type type: (qualified_type name: (type_identifier) @name))
  (implicit_length_array_type element: (type_identifier) @name)
  (implicit_length_array_type element: (qualified_type name: (type_identifier) @name))
  (map_type key: (type_identifier) @name)
  (map_type key: (qualified_type name: (type_identifier) @name))
  (map_type value: (type_identifier) @name)
  (map_type value: (qualified_type name: (type_identifier) @name))
  (method_declaration result: (type_identifier) @name)
  (method_declaration result: (qualified_type name: (type_identifier) @name))
  (method_elem result: (type_identifier) @name)
  (method_elem result: (qualified_type name: (type_identifier) @name))
  (negated_type (type_identifier) @name)
  (negated_type (qualified_type name: (type_identifier) @name))
  (parameter_declaration type: (type_identifier) @name)
  (parameter_declaration type: (qualified_type name: (type_identifier) @name))
  (parenthesized_type (type_identifier) @name)
  (parenthesized_type (qualified_type name: (type_identifier) @name))
  (pointer_type (type_identifier) @name)
  (pointer_type (qualified_type name: (type_identifier) @name))
  (slice_type element: (type_identifier) @name)
  (slice_type element: (qualified_type name: (type_identifier) @name))
  (type_alias type: (type_identifier) @name)
  (type_alias type: (qualified_type name: (type_identifier) @name))
  (type_assertion_expression type: (type_identifier) @name)
  (type_assertion_expression type: (qualified_type name: (type_identifier) @name))
  (type_case type: (type_identifier) @name)
  (type_case type: (qualified_type name: (type_identifier) @name))
  (type_constraint (type_identifier) @name)
  (type_constraint (qualified_type name: (type_identifier) @name))
  (type_conversion_expression type: (type_identifier) @name)
  (type_conversion_expression type: (qualified_type name: (type_identifier) @name))
  ; Type arguments and embedded interfaces: `Pair[Key, int]`, `interface { io.Reader }`.
  (type_elem (type_identifier) @name)
  (type_elem (qualified_type name: (type_identifier) @name))
  (type_instantiation_expression (type_identifier) @name)
  (type_instantiation_expression (qualified_type name: (type_identifier) @name))
  (type_spec type: (type_identifier) @name)
  (type_spec type: (qualified_type name: (type_identifier) @name))
  (var_spec type: (type_identifier) @name)
  (var_spec type: (qualified_type name: (type_identifier) @name))
  (variadic_parameter_declaration type: (type_identifier) @name)
  (variadic_parameter_declaration type: (qualified_type name: (type_identifier) @name))
] @reference.type
  (#not-any-of? @name
    "any" "bool" "byte" "comparable" "complex64" "complex128" "error" "float32" "float64"
    "int" "int8" "int16" "int32" "int64" "rune" "string" "uint" "uint8" "uint16" "uint32"
    "uint64" "uintptr"))

; Comments, for reading a definition with the docs above it (`@comment` on each whole comment
; node).
(comment) @comment
