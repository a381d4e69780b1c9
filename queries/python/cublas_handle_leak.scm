; CUL601 cublas-handle-leak
; Candidates: calls that may create a cuBLAS or cuBLASLt handle. The check resolves library
; creators through imports, finds the handle and looks for its destroy.

; cublas.create(), lib.cublasCreate_v2(ctypes.byref(handle)), lib.cublasLtCreate(...)
(call
  function: (attribute
    attribute: (identifier) @_method)
  (#any-of? @_method "create" "cublasCreate" "cublasCreate_v2" "cublasLtCreate")) @violation

; create() after `from cupy.cuda.cublas import create` (or an alias of it)
(call
  function: (identifier)) @violation
