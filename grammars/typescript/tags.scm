; TypeScript and TSX tags: definitions and references (tree-sitter-typescript 0.23).
;
; Convention (see server/index/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
;
; This one query is compiled against both the TypeScript and the TSX grammar, so it may only use
; node types the two share: no `jsx_*` nodes (JSX component references are not captured in .tsx
; files) and no `type_assertion` (`<T>x`, TypeScript only). The JavaScript part mirrors
; grammars/javascript/tags.scm with TypeScript node names; keep the two in step.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(class_declaration
  name: (type_identifier) @name) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.enum

; `namespace A {}`, `namespace A.B {}`, `module A {}`, `declare module "pkg" {}` (named by the
; string's content).
(internal_module
  name: [
    (identifier)
    (nested_identifier)
    (string (string_fragment))
  ] @name) @definition.module

(module
  name: [
    (identifier)
    (nested_identifier)
    (string (string_fragment))
  ] @name) @definition.module

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

; Overload and ambient signatures: `function parse(x: string): Ast;`, `declare function f(): void;`.
(function_signature
  name: (identifier) @name) @definition.function

; `const foo = () => ...`, `let foo = function () {...}`: a function named by its variable, at any
; depth. The definition spans the declarator (name, type annotation and body).
(variable_declarator
  name: (identifier) @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

; `const Foo = class { ... }`.
(variable_declarator
  name: (identifier) @name
  value: (class)) @definition.class

; Class and object-literal methods (getters, setters, static, #private, the constructor), and
; abstract methods.
(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

(abstract_method_signature
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

; Method overload signatures and methods of ambient classes (`declare class A { m(): void; }`).
(class_body
  (method_signature
    name: [
      (property_identifier)
      (private_property_identifier)
    ] @name) @definition.method)

; Class fields: `private count = 0`, `readonly name: string`.
(public_field_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.field

; Interface members, and members of an object type that is a type alias's value
; (`type Options = { retries: number }`). Object types elsewhere (inline parameter types) are not
; definitions.
(interface_body
  (method_signature
    name: (property_identifier) @name) @definition.method)

(interface_body
  (property_signature
    name: (property_identifier) @name) @definition.field)

(type_alias_declaration
  value: (object_type
    (method_signature
      name: (property_identifier) @name) @definition.method))

(type_alias_declaration
  value: (object_type
    (property_signature
      name: (property_identifier) @name) @definition.field))

; Functions stored in object literals and on objects: `{ render: () => ... }`,
; `module.exports.create = function () {...}`.
(pair
  key: (property_identifier) @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

(assignment_expression
  left: (member_expression
    property: (property_identifier) @name)
  right: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

; Module-level bindings whose value is not a function or class (those are captured above):
; UPPER_CASE names are constants, other names variables. Destructuring patterns are not captured.
(program
  [
    (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (as_expression) (await_expression) (binary_expression) (call_expression)
          (false) (identifier) (member_expression) (new_expression) (non_null_expression)
          (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
          (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ]) @definition.constant)
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (as_expression) (await_expression) (binary_expression) (call_expression)
          (false) (identifier) (member_expression) (new_expression) (non_null_expression)
          (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
          (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ]) @definition.constant)
    (export_statement
      declaration: (lexical_declaration
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (as_expression) (await_expression) (binary_expression) (call_expression)
            (false) (identifier) (member_expression) (new_expression) (non_null_expression)
            (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
            (string) (subscript_expression) (template_string) (ternary_expression) (true)
            (unary_expression) (undefined)
          ]) @definition.constant))
  ]
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(program
  [
    (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (as_expression) (await_expression) (binary_expression) (call_expression)
          (false) (identifier) (member_expression) (new_expression) (non_null_expression)
          (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
          (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ]) @definition.variable)
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (as_expression) (await_expression) (binary_expression) (call_expression)
          (false) (identifier) (member_expression) (new_expression) (non_null_expression)
          (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
          (string) (subscript_expression) (template_string) (ternary_expression) (true)
          (unary_expression) (undefined)
        ]) @definition.variable)
    (export_statement
      declaration: (lexical_declaration
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (as_expression) (await_expression) (binary_expression) (call_expression)
            (false) (identifier) (member_expression) (new_expression) (non_null_expression)
            (null) (number) (object) (parenthesized_expression) (regex) (satisfies_expression)
            (string) (subscript_expression) (template_string) (ternary_expression) (true)
            (unary_expression) (undefined)
          ]) @definition.variable))
  ]
  (#not-match? @name "^_*[A-Z][A-Z0-9_]*$"))

; ---------------------------------------------------------------------------------------------
; Calls: `foo()` / `foo<T>()` is a call, `x.foo()` / `this.#foo()` a method call, `new Foo()` a
; call of `Foo`.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (member_expression
    property: [
      (property_identifier)
      (private_property_identifier)
    ] @name)) @reference.method_call

(new_expression
  constructor: [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.call

; Decorators: `@Injectable` and `@Component({...})` (the latter is a call node, caught above).
(decorator
  [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.call

; ---------------------------------------------------------------------------------------------
; Imports: the imported names. `import {a, b as c} from "m"` and `import type {T} from "m"` -> `a`,
; `b`, `T`; `import d from "m"` -> `d`; `import * as ns from "m"` -> `ns`; `import x = require("m")`
; -> `x`.
; ---------------------------------------------------------------------------------------------

(import_specifier
  name: (identifier) @name) @reference.import

(import_clause
  (identifier) @name) @reference.import

(namespace_import
  (identifier) @name) @reference.import

(import_require_clause
  (identifier) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Type references. Every position that holds a type is listed, so declarations (class, interface
; and alias names, generic parameters `<T>`, `infer T`, mapped-type keys) are never captured.
; `Array<Foo>` gives `Array` and `Foo`; `ns.Foo` gives `Foo`.
; ---------------------------------------------------------------------------------------------

([
  (type_annotation (type_identifier) @name)
  (type_arguments (type_identifier) @name)
  (generic_type name: (type_identifier) @name)
  (nested_type_identifier name: (type_identifier) @name)
  (union_type (type_identifier) @name)
  (intersection_type (type_identifier) @name)
  (array_type (type_identifier) @name)
  (tuple_type (type_identifier) @name)
  (optional_type (type_identifier) @name)
  (rest_type (type_identifier) @name)
  (readonly_type (type_identifier) @name)
  (parenthesized_type (type_identifier) @name)
  (lookup_type (type_identifier) @name)
  (index_type_query (type_identifier) @name)
  (conditional_type (type_identifier) @name)
  (function_type return_type: (type_identifier) @name)
  (constructor_type type: (type_identifier) @name)
  (type_predicate type: (type_identifier) @name)
  (constraint (type_identifier) @name)
  (default_type (type_identifier) @name)
  (mapped_type_clause type: (type_identifier) @name)
  (mapped_type_clause alias: (type_identifier) @name)
  (index_signature index_type: (type_identifier) @name)
  (omitting_type_annotation (type_identifier) @name)
  (adding_type_annotation (type_identifier) @name)
  (opting_type_annotation (type_identifier) @name)
  (template_type (type_identifier) @name)
  (flow_maybe_type (type_identifier) @name)
  (type_alias_declaration value: (type_identifier) @name)
  (as_expression (type_identifier) @name)
  (satisfies_expression (type_identifier) @name)
  ; `interface A extends B, C<D>`, `class A implements B`.
  (extends_type_clause type: (type_identifier) @name)
  (implements_clause (type_identifier) @name)
] @reference.type)

; The base class of `class A extends B` / `extends ns.B` (an expression, not a type).
(extends_clause
  value: [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.type

; Comments, for reading a definition with the docs above it (`@comment` on each whole comment
; node).
(comment) @comment
(html_comment) @comment
