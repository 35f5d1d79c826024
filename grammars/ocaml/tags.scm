; ocaml tags: definitions and references (to be written).
