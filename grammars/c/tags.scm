; C tags: definitions and references (tree-sitter-c 0.24.2).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Prototypes (`int f(void);`) at file level are functions too (see below): a header's API is its
; prototypes. Edits by symbol prefer a function's body to its prototype when a file has both.

; ---------------------------------------------------------------------------------------------
; Functions: the name sits under zero to two pointer declarators (`char **f(void)`).
; ---------------------------------------------------------------------------------------------

(function_definition
  declarator: [
    (function_declarator
      declarator: (identifier) @name)
    (pointer_declarator
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: (function_declarator
            declarator: (identifier) @name))
      ])
  ]) @definition.function

; ---------------------------------------------------------------------------------------------
; Prototypes: `int buf_len(const buf *b);`, `char **split(const char *s);` at file level, in a
; header's include guard or other conditional blocks and in `extern "C" { }`. Not inside function
; bodies (a local prototype declares nothing new).
; ---------------------------------------------------------------------------------------------

([
  (translation_unit
    (declaration
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: [
            (function_declarator
              declarator: (identifier) @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: (identifier) @name))
          ])
      ]) @definition.function)
  (preproc_ifdef
    (declaration
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: [
            (function_declarator
              declarator: (identifier) @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: (identifier) @name))
          ])
      ]) @definition.function)
  (preproc_if
    (declaration
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: [
            (function_declarator
              declarator: (identifier) @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: (identifier) @name))
          ])
      ]) @definition.function)
  (preproc_else
    (declaration
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: [
            (function_declarator
              declarator: (identifier) @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: (identifier) @name))
          ])
      ]) @definition.function)
  (preproc_elif
    (declaration
      declarator: [
        (function_declarator
          declarator: (identifier) @name)
        (pointer_declarator
          declarator: [
            (function_declarator
              declarator: (identifier) @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: (identifier) @name))
          ])
      ]) @definition.function)
  (linkage_specification
    body: (declaration_list
      (declaration
        declarator: [
          (function_declarator
            declarator: (identifier) @name)
          (pointer_declarator
            declarator: [
              (function_declarator
                declarator: (identifier) @name)
              (pointer_declarator
                declarator: (function_declarator
                  declarator: (identifier) @name))
            ])
        ]) @definition.function))
])

; ---------------------------------------------------------------------------------------------
; Types
; ---------------------------------------------------------------------------------------------

; `struct buf { ... }`, `union value { ... }`: only with a body (`struct buf *b` is a use).
(struct_specifier
  name: (type_identifier) @name
  body: (_)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (_)) @definition.struct

(enum_specifier
  name: (type_identifier) @name
  body: (_)) @definition.enum

; `typedef struct { ... } name;`: an anonymous struct, union or enum is named by its typedef.
(type_definition
  type: [
    (struct_specifier
      !name
      body: (_))
    (union_specifier
      !name
      body: (_))
  ]
  declarator: (type_identifier) @name) @definition.struct

(type_definition
  type: (enum_specifier
    !name
    body: (_))
  declarator: (type_identifier) @name) @definition.enum

; `typedef struct tag { ... } alias;`: the tagged struct is captured above; the alias is a type of
; its own (only its name, so it does not enclose the struct), unless it repeats the tag.
((type_definition
  type: [
    (struct_specifier
      name: (type_identifier) @_tag
      body: (_))
    (union_specifier
      name: (type_identifier) @_tag
      body: (_))
    (enum_specifier
      name: (type_identifier) @_tag
      body: (_))
  ]
  declarator: (type_identifier) @name @definition.type)
  (#not-eq? @name @_tag))

(type_definition
  declarator: (type_identifier) @not_a_reference)

; `typedef unsigned long hash;`, `typedef struct buf buf;`, `typedef struct x *x_ptr;`.
(type_definition
  type: [
    (primitive_type)
    (sized_type_specifier)
    (type_identifier)
    (struct_specifier
      !body)
    (union_specifier
      !body)
    (enum_specifier
      !body)
  ]
  declarator: [
    (type_identifier) @name
    (pointer_declarator
      declarator: (type_identifier) @name)
    (array_declarator
      declarator: (type_identifier) @name)
  ]) @definition.type

; `typedef void (*free_fn)(void *);`.
(type_definition
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator
        declarator: (type_identifier) @name)))) @definition.type

; ---------------------------------------------------------------------------------------------
; Members: struct and union fields, enum constants.
; ---------------------------------------------------------------------------------------------

(field_declaration
  declarator: [
    (field_identifier) @name
    (pointer_declarator
      declarator: [
        (field_identifier) @name
        (pointer_declarator
          declarator: (field_identifier) @name)
      ])
    (array_declarator
      declarator: (field_identifier) @name)
    (function_declarator
      declarator: (parenthesized_declarator
        (pointer_declarator
          declarator: (field_identifier) @name)))
  ]) @definition.field

(enumerator
  name: (identifier) @name) @definition.constant

; ---------------------------------------------------------------------------------------------
; Macros: `#define NAME value` and `#define NAME(a, b) ...`.
; ---------------------------------------------------------------------------------------------

(preproc_def
  name: (identifier) @name) @definition.macro

(preproc_function_def
  name: (identifier) @name) @definition.macro

; ---------------------------------------------------------------------------------------------
; Globals: file-level variables (`static size_t total;`, `extern int verbose;`, `const char *v`).
; ---------------------------------------------------------------------------------------------

(translation_unit
  (declaration
    declarator: [
      (identifier) @name
      (pointer_declarator
        declarator: (identifier) @name)
      (array_declarator
        declarator: (identifier) @name)
      (init_declarator
        declarator: [
          (identifier) @name
          (pointer_declarator
            declarator: (identifier) @name)
          (array_declarator
            declarator: (identifier) @name)
        ])
    ]) @definition.variable)

; ---------------------------------------------------------------------------------------------
; Calls: `f(x)` (a function or a function-like macro: the grammar cannot tell them apart), and
; `ops->free(x)` through a struct's function pointer.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    field: (field_identifier) @name)) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Types: every type name (`struct buf *b`, `buf_slice s`, casts, sizeof).
; ---------------------------------------------------------------------------------------------

(type_identifier) @name @reference.type

; ---------------------------------------------------------------------------------------------
; Includes: the included path (`#include "buf.h"` -> `buf.h`, `#include <stdio.h>` ->
; `<stdio.h>`, a system header's angle brackets being part of its token).
; ---------------------------------------------------------------------------------------------

(preproc_include
  path: [
    (string_literal
      (string_content) @name)
    (system_lib_string) @name
  ]) @reference.import

; ---------------------------------------------------------------------------------------------
; Comments (`@comment` on each whole comment node): a Doxygen comment above a definition is its
; doc.
; ---------------------------------------------------------------------------------------------

(comment) @comment
