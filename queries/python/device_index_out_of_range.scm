; CUL801 device-index-out-of-range
; Candidates: literal device indices. The check resolves the calls and compares the index with
; the number of visible GPUs.

; "cuda:3" anywhere a value goes
((string (string_content) @_content) @violation
  (#match? @_content "^cuda:[0-9]+$"))

; torch.cuda.set_device(3), x.cuda(3), torch.cuda.device(3)
(call
  function: [
    (attribute attribute: (identifier) @_method)
    (identifier) @_method
  ]
  arguments: (argument_list . (integer) @violation)
  (#any-of? @_method "set_device" "cuda" "device"))

; torch.device("cuda", 3)
(call
  arguments: (argument_list . (string) . (integer) @violation))

; DataParallel(model, device_ids=[0, 1, 2, 3], output_device=0)
(keyword_argument
  name: (identifier) @_keyword
  value: (list (integer) @violation)
  (#eq? @_keyword "device_ids"))

(keyword_argument
  name: (identifier) @_keyword
  value: (integer) @violation
  (#eq? @_keyword "output_device"))
