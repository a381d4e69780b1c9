; CUL301 missing-gradient-checkpointing
; Candidates: model loads (`from_pretrained`, `from_config`, timm's `create_model`), and
; `x = block(x)` chains, which the check keeps when they run a stack of blocks in `forward`.

(call
  function: (attribute attribute: (identifier) @_method)
  (#any-of? @_method "from_pretrained" "from_config")) @violation

(call
  function: [
    (identifier) @_function
    (attribute attribute: (identifier) @_function)
  ]
  (#eq? @_function "create_model")) @violation

(assignment
  left: (identifier) @_output
  right: (call
    function: (identifier)
    arguments: (argument_list . (identifier) @_input))
  (#eq? @_output @_input)) @violation
