; Definitions and references for the repo map (also used for C++, with cpp.scm).

(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))
  ])

; prototypes in headers
(declaration
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))
  ])

(struct_specifier name: (type_identifier) @name.definition.struct body: (_))

(union_specifier name: (type_identifier) @name.definition.union body: (_))

(enum_specifier name: (type_identifier) @name.definition.enum body: (_))

(type_definition declarator: (type_identifier) @name.definition.type)

(preproc_def name: (identifier) @name.definition.constant)

(preproc_function_def name: (identifier) @name.definition.macro)

(call_expression function: (identifier) @name.reference.call)

(call_expression function: (field_expression field: (field_identifier) @name.reference.call))

(type_identifier) @name.reference.type
