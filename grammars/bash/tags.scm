; Bash tags: definitions and references (tree-sitter-bash 0.25).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Bash has no classes or modules: functions, file-level constants (`readonly`, `declare -r`) and
; variables (`export`, `declare`, plain `NAME=value`) are its definitions. A script's "imports" are
; the files it sources, and every command word is a call (a function of this file or a program).

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

; `name() { ... }`, `function name { ... }`, `function name() { ... }`.
(function_definition
  name: (word) @name) @definition.function

; `readonly NAME=value`, `readonly -a NAMES=(...)`, `readonly NAME` (anywhere: a readonly name is
; a constant for the rest of the script).
(declaration_command
  "readonly"
  [
    (variable_assignment
      name: (variable_name) @name)
    (variable_name) @name
  ]) @definition.constant

; `declare -r NAME=value`, `typeset -r`, `declare -rx`: read-only flags make a constant.
(declaration_command
  ["declare" "typeset"]
  (word) @_flag
  [
    (variable_assignment
      name: (variable_name) @name)
    (variable_name) @name
  ]
  (#match? @_flag "^-[a-zA-Z]*r")) @definition.constant

; `export NAME=value`, `export NAME`: an environment variable the script sets.
(declaration_command
  "export"
  [
    (variable_assignment
      name: (variable_name) @name)
    (variable_name) @name
  ]) @definition.variable

; File-level `declare NAME=...` without a read-only flag, and plain `NAME=value` assignments.
; Assignments inside functions (and `local`) are not definitions.
(program
  (declaration_command
    ["declare" "typeset"]
    .
    (variable_assignment
      name: (variable_name) @name)) @definition.variable)

(program
  (declaration_command
    ["declare" "typeset"]
    (word) @_flag
    (variable_assignment
      name: (variable_name) @name)
    (#not-match? @_flag "^-[a-zA-Z]*r")) @definition.variable)

(program
  (variable_assignment
    name: (variable_name) @name) @definition.variable)

; ---------------------------------------------------------------------------------------------
; Imports: `source lib/log.sh`, `. ./lib/platform.sh` -> the path as written (for a quoted path,
; its literal text: `"$(dirname "$0")/lib/log.sh"` -> `/lib/log.sh`).
; ---------------------------------------------------------------------------------------------

(command
  name: (command_name
    (word) @_source)
  argument: [
    (word) @name
    (raw_string) @name
    (string
      (string_content) @name)
    (concatenation) @name
  ]
  (#any-of? @_source "source" ".")) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: every command word (`say "x"`, `need_cmd cargo`, `tar -czf ...`), except `source`/`.`,
; whose argument is the import above. A command named by an expansion (`"$@"`) is not a name.
; ---------------------------------------------------------------------------------------------

(command
  name: (command_name
    (word) @name)
  (#not-any-of? @name "source" ".")) @reference.call

; Comments (the shebang line is a comment too), for reading a definition with the docs above it.
(comment) @comment
