; C++ tags: definitions and references (tree-sitter-cpp 0.23.4).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; A function defined inside a class becomes a method in the extractor. A definition outside its
; class (`double Rect::area() const`) is a method named `area` whose `@qualifier` (`Rect`) is
; added to its scope. A template's definition is the declaration under `template <...>`; the
; template line leads it (language.toml). Prototypes outside classes are functions (a header's
; API, as in the C query); member declarations inside a class are the class's methods.

; ---------------------------------------------------------------------------------------------
; Functions and methods defined in place: `f()`, `*f()`, `&f()`, an operator, a destructor.
; ---------------------------------------------------------------------------------------------

(function_definition
  declarator: [
    (function_declarator
      declarator: [
        (identifier)
        (field_identifier)
        (operator_name)
        (destructor_name)
      ] @name)
    (pointer_declarator
      declarator: (function_declarator
        declarator: [
          (identifier)
          (field_identifier)
          (operator_name)
        ] @name))
    (reference_declarator
      (function_declarator
        declarator: [
          (identifier)
          (field_identifier)
          (operator_name)
        ] @name))
  ]) @definition.function

; ---------------------------------------------------------------------------------------------
; Methods defined outside their class: `Rect::area`, `geom::Rect::area` (the qualifier is the
; class, or the class under its namespace), `Stack<T>::push`, `Counts::operator+=`.
; ---------------------------------------------------------------------------------------------

(function_definition
  declarator: [
    (function_declarator
      declarator: (qualified_identifier
        scope: [
          (namespace_identifier) @qualifier
          (template_type
            name: (type_identifier) @qualifier)
        ]
        name: [
          (identifier)
          (operator_name)
          (destructor_name)
        ] @name))
    (pointer_declarator
      declarator: (function_declarator
        declarator: (qualified_identifier
          scope: [
            (namespace_identifier) @qualifier
            (template_type
              name: (type_identifier) @qualifier)
          ]
          name: [
            (identifier)
            (operator_name)
          ] @name)))
    (reference_declarator
      (function_declarator
        declarator: (qualified_identifier
          scope: [
            (namespace_identifier) @qualifier
            (template_type
              name: (type_identifier) @qualifier)
          ]
          name: [
            (identifier)
            (operator_name)
          ] @name)))
  ]) @definition.method

; Two levels: `ns::Rect::area`, where the qualifier nearest the name is the class.
(function_definition
  declarator: [
    (function_declarator
      declarator: (qualified_identifier
        scope: (namespace_identifier) @qualifier
        name: (qualified_identifier
          scope: [
            (namespace_identifier) @qualifier
            (template_type
              name: (type_identifier) @qualifier)
          ]
          name: [
            (identifier)
            (operator_name)
            (destructor_name)
          ] @name)))
    (pointer_declarator
      declarator: (function_declarator
        declarator: (qualified_identifier
          scope: (namespace_identifier) @qualifier
          name: (qualified_identifier
            scope: [
              (namespace_identifier) @qualifier
              (template_type
                name: (type_identifier) @qualifier)
            ]
            name: [
              (identifier)
              (operator_name)
            ] @name))))
    (reference_declarator
      (function_declarator
        declarator: (qualified_identifier
          scope: (namespace_identifier) @qualifier
          name: (qualified_identifier
            scope: [
              (namespace_identifier) @qualifier
              (template_type
                name: (type_identifier) @qualifier)
            ]
            name: [
              (identifier)
              (operator_name)
            ] @name))))
  ]) @definition.method

; ---------------------------------------------------------------------------------------------
; Prototypes outside classes: `double total_area(const ShapeList&);`, `bool operator==(A, B);` at
; file or namespace level, in a header's include guard and in `extern "C" { }`.
; ---------------------------------------------------------------------------------------------

([
  (translation_unit
    (declaration
      declarator: [
          (function_declarator
            declarator: [
              (identifier)
              (operator_name)
            ] @name)
          (pointer_declarator
            declarator: (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
          (reference_declarator
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
        ]) @definition.function)
  (preproc_ifdef
    (declaration
      declarator: [
          (function_declarator
            declarator: [
              (identifier)
              (operator_name)
            ] @name)
          (pointer_declarator
            declarator: (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
          (reference_declarator
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
        ]) @definition.function)
  (preproc_if
    (declaration
      declarator: [
          (function_declarator
            declarator: [
              (identifier)
              (operator_name)
            ] @name)
          (pointer_declarator
            declarator: (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
          (reference_declarator
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
        ]) @definition.function)
  (preproc_else
    (declaration
      declarator: [
          (function_declarator
            declarator: [
              (identifier)
              (operator_name)
            ] @name)
          (pointer_declarator
            declarator: (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
          (reference_declarator
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
        ]) @definition.function)
  (preproc_elif
    (declaration
      declarator: [
          (function_declarator
            declarator: [
              (identifier)
              (operator_name)
            ] @name)
          (pointer_declarator
            declarator: (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
          (reference_declarator
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name))
        ]) @definition.function)
  (namespace_definition
    body: (declaration_list
      (declaration
        declarator: [
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: [
                  (identifier)
                  (operator_name)
                ] @name))
            (reference_declarator
              (function_declarator
                declarator: [
                  (identifier)
                  (operator_name)
                ] @name))
          ]) @definition.function))
  (linkage_specification
    body: (declaration_list
      (declaration
        declarator: [
            (function_declarator
              declarator: [
                (identifier)
                (operator_name)
              ] @name)
            (pointer_declarator
              declarator: (function_declarator
                declarator: [
                  (identifier)
                  (operator_name)
                ] @name))
            (reference_declarator
              (function_declarator
                declarator: [
                  (identifier)
                  (operator_name)
                ] @name))
          ]) @definition.function))
])

; ---------------------------------------------------------------------------------------------
; Member function declarations inside a class: `double area() const override;`,
; `Counts& operator+=(Stroke);`, `static Rect square(..);`, and constructors and destructors
; (`Rect(Point, double);`, `~Rect();`), which the grammar parses as plain declarations.
; ---------------------------------------------------------------------------------------------

(field_declaration
  declarator: [
    (function_declarator
      declarator: [
        (field_identifier)
        (operator_name)
      ] @name)
    (pointer_declarator
      declarator: (function_declarator
        declarator: [
          (field_identifier)
          (operator_name)
        ] @name))
    (reference_declarator
      (function_declarator
        declarator: [
          (field_identifier)
          (operator_name)
        ] @name))
  ]) @definition.method

(field_declaration_list
  (declaration
    declarator: (function_declarator
      declarator: [
        (identifier)
        (destructor_name)
      ] @name)) @definition.method)

; ---------------------------------------------------------------------------------------------
; Types: classes, structs, unions and enums with a body (`class Foo;` and `struct Foo *p` are
; uses); a specialization `class Foo<int> { }` is named by its template.
; ---------------------------------------------------------------------------------------------

(class_specifier
  name: [
    (type_identifier) @name
    (template_type
      name: (type_identifier) @name)
  ]
  body: (_)) @definition.class

(struct_specifier
  name: [
    (type_identifier) @name
    (template_type
      name: (type_identifier) @name)
  ]
  body: (_)) @definition.struct

(union_specifier
  name: (type_identifier) @name
  body: (_)) @definition.struct

; `enum E { }` and `enum class E { }`.
(enum_specifier
  name: (type_identifier) @name
  body: (_)) @definition.enum

; `typedef struct { ... } name;`: an anonymous struct is named by its typedef.
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

; `typedef struct tag { ... } alias;`: the alias alone, unless it repeats the tag.
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

; `typedef std::vector<T> List;`, `typedef Node *NodePtr;`.
(type_definition
  type: [
    (primitive_type)
    (sized_type_specifier)
    (type_identifier)
    (qualified_identifier)
    (template_type)
    (struct_specifier
      !body)
    (class_specifier
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

; `typedef void (*Callback)(int);`.
(type_definition
  declarator: (function_declarator
    declarator: (parenthesized_declarator
      (pointer_declarator
        declarator: (type_identifier) @name)))) @definition.type

; `using ShapePtr = std::unique_ptr<Shape>;`.
(alias_declaration
  name: (type_identifier) @name) @definition.type

; ---------------------------------------------------------------------------------------------
; Namespaces: `namespace geom { }`, `namespace a::b { }` (named `a::b`). An anonymous namespace
; has no name and is not captured.
; ---------------------------------------------------------------------------------------------

(namespace_definition
  name: [
    (namespace_identifier)
    (nested_namespace_specifier)
  ] @name) @definition.module

; ---------------------------------------------------------------------------------------------
; Members: data members, enumerators.
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
    (reference_declarator
      (field_identifier) @name)
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
; Globals: variables at file or namespace level (`constexpr double kPi = ..;`).
; ---------------------------------------------------------------------------------------------

([
  (translation_unit
    (declaration
      declarator: [
        (identifier) @name
        (pointer_declarator
          declarator: (identifier) @name)
        (reference_declarator
          (identifier) @name)
        (array_declarator
          declarator: (identifier) @name)
        (init_declarator
          declarator: [
            (identifier) @name
            (pointer_declarator
              declarator: (identifier) @name)
            (reference_declarator
              (identifier) @name)
            (array_declarator
              declarator: (identifier) @name)
          ])
      ]) @definition.variable)
  (namespace_definition
    body: (declaration_list
      (declaration
        declarator: [
          (identifier) @name
          (pointer_declarator
            declarator: (identifier) @name)
          (reference_declarator
            (identifier) @name)
          (array_declarator
            declarator: (identifier) @name)
          (init_declarator
            declarator: [
              (identifier) @name
              (pointer_declarator
                declarator: (identifier) @name)
              (reference_declarator
                (identifier) @name)
              (array_declarator
                declarator: (identifier) @name)
            ])
        ]) @definition.variable))
])

; ---------------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------------

; `f(x)`, `std::sort(..)` -> `sort`, `std::make_unique<T>(..)` -> `make_unique`, `Rect::square(..)`.
; The cast operators parse as template calls and are left out.
((call_expression
  function: [
    (identifier) @name
    (qualified_identifier
      name: [
        (identifier) @name
        (template_function
          name: (identifier) @name)
        (qualified_identifier
          name: (identifier) @name)
      ])
    (template_function
      name: (identifier) @name)
  ]) @reference.call
  (#not-any-of? @name "static_cast" "dynamic_cast" "const_cast" "reinterpret_cast"))

; `shape->area()`, `items.begin()`, `x.get<T>()`.
(call_expression
  function: (field_expression
    field: [
      (field_identifier) @name
      (template_method
        name: (field_identifier) @name)
    ])) @reference.method_call

; `new Rect(..)` calls Rect's constructor (one name node is one reference: the call stands
; for the type's use too).
(new_expression
  type: [
    (type_identifier) @name
    (qualified_identifier
      name: (type_identifier) @name)
    (template_type
      name: (type_identifier) @name)
  ]) @reference.call

; ---------------------------------------------------------------------------------------------
; Types: every type name. Template parameters declare, they do not refer.
; ---------------------------------------------------------------------------------------------

(type_identifier) @name @reference.type

(type_parameter_declaration
  (type_identifier) @not_a_reference)

(optional_type_parameter_declaration
  name: (type_identifier) @not_a_reference)

(variadic_type_parameter_declaration
  (type_identifier) @not_a_reference)

; ---------------------------------------------------------------------------------------------
; Includes and using-declarations: `#include "shapes.h"` -> `shapes.h` (`<vector>` keeps its
; angle brackets, part of its token); `using std::size_t;` -> `size_t`.
; ---------------------------------------------------------------------------------------------

(preproc_include
  path: [
    (string_literal
      (string_content) @name)
    (system_lib_string) @name
  ]) @reference.import

(using_declaration
  (qualified_identifier
    name: (identifier) @name)) @reference.import

; ---------------------------------------------------------------------------------------------
; Comments (`@comment` on each whole comment node): a Doxygen comment above a definition is its
; doc.
; ---------------------------------------------------------------------------------------------

(comment) @comment
