; CUL204 invalid-alloc-conf
; Candidates: every statement that may set an environment variable. The check resolves
; `os.environ` and `os.putenv` through imports and reads the variable's literal name.

; os.environ["NAME"] = value
(assignment
  left: (subscript
    subscript: (string))) @violation

; os.environ.setdefault(...), os.environ.update(...), os.putenv(...)
(call
  function: (attribute
    attribute: (identifier) @_method)
  (#any-of? @_method "setdefault" "update" "putenv")) @violation

; putenv(...) after `from os import putenv`
(call
  function: (identifier) @_function
  (#eq? @_function "putenv")) @violation
