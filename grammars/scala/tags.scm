; Scala tags: definitions and references (tree-sitter-scala 0.26.9; Scala 2 and 3 syntax).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; `def`s directly in a class, trait or enum become methods in the extractor; an `object` is a
; module, so its `def`s stay functions (they are called like a module's functions).

; ---------------------------------------------------------------------------------------------
; Packages: `package a.b` encloses the rest of the file; `package a.b { ... }` its block.
; ---------------------------------------------------------------------------------------------

(package_clause
  name: (package_identifier) @name
  !body) @definition.module @scope.file

(package_clause
  name: (package_identifier) @name
  body: (template_body)) @definition.module

; ---------------------------------------------------------------------------------------------
; Types. `case class` is a record; a class is any other `class_definition` (told apart by the
; text before the name, as the `case` keyword has no node of its own to test for absence).
; ---------------------------------------------------------------------------------------------

(class_definition
  "case"
  name: (identifier) @name) @definition.record

((class_definition
  name: (identifier) @name) @definition.class
  (#not-match? @definition.class "^([^{(:=]*\\s)?case\\s+class\\s"))

(trait_definition
  name: (identifier) @name) @definition.trait

(enum_definition
  name: (identifier) @name) @definition.enum

(simple_enum_case
  name: (identifier) @name) @definition.constant

(full_enum_case
  name: (identifier) @name) @definition.constant

; `object X`, `case object X`, `package object x`.
(object_definition
  name: (identifier) @name) @definition.module

(package_object
  name: (identifier) @name) @definition.module

(type_definition
  name: (type_identifier) @name) @definition.type

; ---------------------------------------------------------------------------------------------
; Functions: `def f = ...` and abstract `def f: T`.
; ---------------------------------------------------------------------------------------------

(function_definition
  name: (identifier) @name) @definition.function

(function_declaration
  name: (identifier) @name) @definition.function

; Scala 3 givens: `given intOrd: Ord[Int] with { ... }` is a value named `intOrd`; an anonymous
; `given Ord[Int] with { ... }` is named by its type, as the compiler's synthesized name is.
(given_definition
  name: (identifier) @name) @definition.variable

(given_definition
  !name
  return_type: (_) @name) @definition.variable

; ---------------------------------------------------------------------------------------------
; Values: `val`/`var` in a class, trait or object body are fields; at the top level (Scala 3)
; variables. Parameters of a case class and `val`/`var` parameters of a class are fields.
; Local values are not definitions.
; ---------------------------------------------------------------------------------------------

(template_body
  [
    (val_definition
      pattern: (identifier) @name)
    (var_definition
      pattern: (identifier) @name)
    (val_declaration
      name: (identifier) @name)
    (var_declaration
      name: (identifier) @name)
  ] @definition.field)

(compilation_unit
  [
    (val_definition
      pattern: (identifier) @name)
    (var_definition
      pattern: (identifier) @name)
  ] @definition.variable)

(class_parameter
  [
    "val"
    "var"
  ]
  name: (identifier) @name) @definition.field

(class_definition
  "case"
  class_parameters: (class_parameters
    (class_parameter
      name: (identifier) @name) @definition.field))

; ---------------------------------------------------------------------------------------------
; Imports: `import a.b.C` -> `C`; `import a.{B, C => D}` -> `B`, `C`.
; ---------------------------------------------------------------------------------------------

(import_declaration
  (identifier) @name .) @reference.import

(import_declaration
  (namespace_selectors
    [
      (identifier) @name
      (arrow_renamed_identifier
        name: (identifier) @name)
      (as_renamed_identifier
        name: (identifier) @name)
    ])) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: `f(x)` and `Delayed(n)` (an `apply`) are calls; `a.b(x)` is a method call. Parameterless
; calls (`a.size`, `refill`) read as names and are not captured.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    field: (identifier) @name)) @reference.method_call

(call_expression
  function: (generic_function
    function: (identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: (field_expression
      field: (identifier) @name))) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Type references: every written type (annotations, returns, `extends`, `new X`, type
; arguments). Standard scalar types are skipped.
; ---------------------------------------------------------------------------------------------

((type_identifier) @name @reference.type
  (#not-any-of? @name "Int" "Long" "Short" "Byte" "Boolean" "Char" "Float" "Double" "String" "Unit" "Any" "AnyRef" "AnyVal" "Nothing"))

; Comments, for reading a definition with the docs above it: Scaladoc `/** */`, `/* */`, `//`.
[
  (comment)
  (block_comment)
] @comment
