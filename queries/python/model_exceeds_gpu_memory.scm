; CUL803 model-exceeds-gpu-memory
; Candidates: `X.from_pretrained(...)` calls. The check resolves X to a transformers model class,
; reads the model id (a literal, or a module-level variable holding one) and estimates memory.
(call
  function: (attribute attribute: (identifier) @_method)
  (#eq? @_method "from_pretrained")) @violation
