; OCaml tags: definitions and references (tree-sitter-ocaml 0.26, the `ocaml` grammar of .ml files).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Structure-level `let`s are functions when they take parameters or are `fun`/`function`
; expressions, variables otherwise (`let x = ... in` inside an expression is not captured);
; `module M = struct ... end` and functors are modules and nest; `module type S = sig ... end` is
; an interface whose `val`s are its methods; `type`s are types (record fields fields) and so are
; exceptions. `(** *)` doc comments are comment nodes above what they document.

; ---------------------------------------------------------------------------------------------
; Let bindings (the first of a `let ... and ...` spans the whole definition, the others their
; own binding).
; ---------------------------------------------------------------------------------------------

([
  (compilation_unit
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        (parameter))) @definition.function)
  (structure
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        (parameter))) @definition.function)
  (compilation_unit
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        body: [(fun_expression) (function_expression)])) @definition.function)
  (structure
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        body: [(fun_expression) (function_expression)])) @definition.function)
])

([
  (compilation_unit
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        .
        body: (_) @_body)) @definition.variable)
  (structure
    (value_definition
      .
      (let_binding
        pattern: (value_name) @name
        .
        body: (_) @_body)) @definition.variable)
]
  (#not-match? @_body "^(fun|function)[ \t\n]"))

([
  (compilation_unit
    (value_definition
      (let_binding)
      (let_binding
        pattern: (value_name) @name
        (parameter)) @definition.function))
  (structure
    (value_definition
      (let_binding)
      (let_binding
        pattern: (value_name) @name
        (parameter)) @definition.function))
])

; ---------------------------------------------------------------------------------------------
; Modules, module types, types, exceptions
; ---------------------------------------------------------------------------------------------

(module_definition
  (module_binding
    (module_name) @name)) @definition.module

(module_type_definition
  (module_type_name) @name) @definition.interface

; `val compare : t -> t -> int` in a signature.
(value_specification
  (value_name) @name) @definition.function

(type_definition
  .
  (type_binding
    name: (type_constructor) @name)) @definition.type

(type_definition
  (type_binding)
  (type_binding
    name: (type_constructor) @name) @definition.type)

(field_declaration
  (field_name) @name) @definition.field

(exception_definition
  (constructor_declaration
    (constructor_name) @name)) @definition.type

; ---------------------------------------------------------------------------------------------
; Imports: `open Printf`, `include Stdlib.Fun` -> the module path as written.
; ---------------------------------------------------------------------------------------------

(open_module
  module: (_) @name) @reference.import

(include_module
  module: (_) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: `f x`, `SMap.find_opt key m` (the value's name, without its module path).
; ---------------------------------------------------------------------------------------------

(application_expression
  function: (value_path
    (value_name) @name)) @reference.call

; ---------------------------------------------------------------------------------------------
; Type references: named types (`stats`, `SMap.t`, `'a entry`); builtin types are skipped.
; ---------------------------------------------------------------------------------------------

((type_constructor_path
  (type_constructor) @name) @reference.type
  (#not-any-of? @name "int" "float" "string" "char" "bool" "unit" "bytes" "list" "array"
    "option" "ref" "exn" "int32" "int64" "nativeint"))

; Comments (`(* *)` and `(** *)` docs), for reading a definition with the docs above it.
(comment) @comment
