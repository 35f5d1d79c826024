; C# tags: definitions and references (tree-sitter-c-sharp 0.23.5).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Attributes and modifiers are children of the declaration they annotate. Type names are plain
; `identifier`s in this grammar, so type references are captured by position.

; ---------------------------------------------------------------------------------------------
; Namespaces: `namespace A.B { }` encloses its block; `namespace A.B;` the rest of the file.
; ---------------------------------------------------------------------------------------------

(namespace_declaration
  name: [
    (identifier)
    (qualified_name)
  ] @name) @definition.module

(file_scoped_namespace_declaration
  name: [
    (identifier)
    (qualified_name)
  ] @name) @definition.module @scope.file

; ---------------------------------------------------------------------------------------------
; Types
; ---------------------------------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(struct_declaration
  name: (identifier) @name) @definition.struct

; `record R(..)`, `record class`, `record struct`.
(record_declaration
  name: (identifier) @name) @definition.record

(interface_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.enum

; `delegate void Callback(Job job);` names a type of method.
(delegate_declaration
  name: (identifier) @name) @definition.type

; ---------------------------------------------------------------------------------------------
; Members
; ---------------------------------------------------------------------------------------------

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

; `~Pool()`: named by its class.
(destructor_declaration
  name: (identifier) @name) @definition.method

; `operator <(A a, A b)`: named by its operator token (`<`).
(operator_declaration
  operator: _ @name) @definition.method

; A function declared inside a method body.
(local_function_statement
  name: (identifier) @name) @definition.function

; Properties and events are the members a caller reads like fields.
(property_declaration
  name: (identifier) @name) @definition.field

(event_declaration
  name: (identifier) @name) @definition.field

; Indexers (`public T this[int index] { get; set; }`) are read like fields too; C# names them by
; their keyword, `this`.
(indexer_declaration
  "this" @name) @definition.field

(event_field_declaration
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))) @definition.field

; `const` fields are constants (`const` comes before the first `=`), every other field a field.
((field_declaration
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))) @definition.constant
  (#match? @definition.constant "^[^=;]*\\bconst\\b"))

((field_declaration
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))) @definition.field
  (#not-match? @definition.field "^[^=;]*\\bconst\\b"))

(enum_member_declaration
  name: (identifier) @name) @definition.constant

; A positional record's parameters are its properties.
(record_declaration
  (parameter_list
    (parameter
      name: (identifier) @name) @definition.field))

; ---------------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------------

; `F(x)`, `F<T>(x)`; `nameof(x)` is an operator, not a call.
((invocation_expression
  function: [
    (identifier) @name
    (generic_name
      (identifier) @name)
  ]) @reference.call
  (#not-eq? @name "nameof"))

; `x.F()`, `Job.Create(..)`, `x.F<T>()`.
(invocation_expression
  function: (member_access_expression
    name: [
      (identifier) @name
      (generic_name
        (identifier) @name)
    ])) @reference.method_call

; `handler?.Invoke(..)`.
(invocation_expression
  function: (conditional_access_expression
    (member_binding_expression
      name: [
        (identifier) @name
        (generic_name
          (identifier) @name)
      ]))) @reference.method_call

; `new Job(..)` calls Job's constructor (one name node is one reference: the call stands for
; the type's use too).
(object_creation_expression
  type: [
    (identifier) @name
    (generic_name
      (identifier) @name)
    (qualified_name
      name: (identifier) @name)
  ]) @reference.call

; ---------------------------------------------------------------------------------------------
; Types, by position: declared types of variables, fields, parameters and properties, return
; types, base types, type arguments, constraints, `new T()`, casts, `typeof`, patterns.
; ---------------------------------------------------------------------------------------------

([
  (variable_declaration
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (parameter
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (property_declaration
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (indexer_declaration
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (method_declaration
    returns: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (local_function_statement
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (delegate_declaration
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (nullable_type
    type: (identifier) @name)
  (array_type
    type: (identifier) @name)
  (base_list
    [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (type_argument_list
    [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (type_parameter_constraint
    type: (identifier) @name)
  (object_creation_expression
    type: [
      (identifier) @name
      (qualified_name
        name: (identifier) @name)
    ])
  (cast_expression
    type: (identifier) @name)
  (typeof_expression
    type: (identifier) @name)
  (declaration_pattern
    type: (identifier) @name)
] @reference.type)

; `List<Job>`, `IComparable<Tick>`: a generic type names its type (a generic method call is
; captured above as a call).
((generic_name
  (identifier) @name) @reference.type
  (#match? @name "^[A-Z]"))

; `[Serializable]`, `[Obsolete("..")]`: an attribute refers to its class.
(attribute
  name: [
    (identifier) @name
    (qualified_name
      name: (identifier) @name)
  ]) @reference.type

; ---------------------------------------------------------------------------------------------
; Imports: the imported namespace or type as written (`using System.Text;` -> `System.Text`,
; `using Json = System.Text.Json.JsonSerializer;` -> `System.Text.Json.JsonSerializer`).
; ---------------------------------------------------------------------------------------------

(using_directive
  [
    (identifier)
    (qualified_name)
  ] @name
  .) @reference.import

; ---------------------------------------------------------------------------------------------
; Comments (`@comment` on each whole comment node): `///` XML doc lines above a definition are
; its doc.
; ---------------------------------------------------------------------------------------------

(comment) @comment
