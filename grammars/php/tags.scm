; PHP tags: definitions and references (tree-sitter-php 0.25.1, the `php` grammar).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Qualified names (`\App\Cache\Store`) are referred to by their last part; a namespace is named in
; full (`App\Cache`).

; ---------------------------------------------------------------------------------------------
; Namespaces. `namespace App\Cache;` encloses the rest of the file up to the next namespace
; (`@scope.file`); `namespace App\Cache { ... }` encloses its block.
; ---------------------------------------------------------------------------------------------

(namespace_definition
  name: (namespace_name) @name
  !body) @definition.module @scope.file

(namespace_definition
  name: (namespace_name) @name
  body: (compound_statement)) @definition.module

; ---------------------------------------------------------------------------------------------
; Types and their members.
; ---------------------------------------------------------------------------------------------

(class_declaration
  name: (name) @name) @definition.class

(interface_declaration
  name: (name) @name) @definition.interface

(trait_declaration
  name: (name) @name) @definition.trait

(enum_declaration
  name: (name) @name) @definition.enum

(enum_case
  name: (name) @name) @definition.constant

(method_declaration
  name: (name) @name) @definition.method

(function_definition
  name: (name) @name) @definition.function

; `const A = 1, B = 2;` at the top level, in a namespace or in a class: one definition per name,
; each spanning the whole declaration.
(const_declaration
  (const_element
    (name) @name)) @definition.constant

; Properties: `private array $storage = [];` and promoted constructor parameters
; (`public function __construct(private Clock $clock)`), which sit inside the constructor.
(property_declaration
  (property_element
    name: (variable_name
      (name) @name))) @definition.field

(property_promotion_parameter
  name: (variable_name
    (name) @name)) @definition.field

; ---------------------------------------------------------------------------------------------
; Imports: `use App\Cache\Store;` -> `Store`; `use A\B as C;` -> `B`; `use function a\b;` -> `b`.
; ---------------------------------------------------------------------------------------------

(namespace_use_clause
  .
  (qualified_name
    (name) @name)) @reference.import

(namespace_use_clause
  .
  (name) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: `count($x)` and `\App\now()` are calls; `$a->b()`, `$a?->b()` and `A::b()` are method
; calls.
; ---------------------------------------------------------------------------------------------

(function_call_expression
  function: [
    (name) @name
    (qualified_name
      (name) @name)
  ]) @reference.call

(member_call_expression
  name: (name) @name) @reference.method_call

(nullsafe_member_call_expression
  name: (name) @name) @reference.method_call

(scoped_call_expression
  name: (name) @name) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Type references: declared types of parameters, properties and returns, `new X`, `X::y()` and
; `X::CONST`, `extends`/`implements`, trait `use`, attributes, caught exceptions (`catch (A | B
; $e)` holds named types). `self`, `static` and `parent` are not types of their own.
; ---------------------------------------------------------------------------------------------

([
  (named_type (name) @name)
  (named_type (qualified_name (name) @name))
  (object_creation_expression (name) @name)
  (object_creation_expression (qualified_name (name) @name))
  (scoped_call_expression scope: (name) @name)
  (scoped_call_expression scope: (qualified_name (name) @name))
  (class_constant_access_expression . (name) @name)
  (class_constant_access_expression . (qualified_name (name) @name))
  (base_clause (name) @name)
  (base_clause (qualified_name (name) @name))
  (class_interface_clause (name) @name)
  (class_interface_clause (qualified_name (name) @name))
  (use_declaration (name) @name)
  (use_declaration (qualified_name (name) @name))
  ; Attributes name the class they instantiate: `#[\Attribute]`, `#[AsListener('x')]`.
  (attribute (name) @name)
  (attribute (qualified_name (name) @name))
] @reference.type
  (#not-any-of? @name "self" "static" "parent"))

; Comments, for reading a definition with the docs above it: PHPDoc `/** */`, `//`, `#`.
(comment) @comment
