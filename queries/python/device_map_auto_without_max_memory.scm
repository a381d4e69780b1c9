; CUL103 device-map-auto-without-max-memory
; Candidates: `X.from_pretrained(..., device_map="auto")`. The check resolves `X` to a loader
; library and looks for `max_memory`.
(call
  function: (attribute
    attribute: (identifier) @_method)
  (#eq? @_method "from_pretrained")
  arguments: (argument_list
    (keyword_argument
      name: (identifier) @_key
      (#eq? @_key "device_map")
      value: (string)))) @violation
