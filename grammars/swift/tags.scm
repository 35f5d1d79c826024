; swift tags: definitions and references (to be written).
