; C++-only definitions and references; c.scm is applied too.

(class_specifier name: (type_identifier) @name.definition.class body: (_))

(namespace_definition name: (namespace_identifier) @name.definition.module)

(alias_declaration name: (type_identifier) @name.definition.type)

; methods declared or defined inside a class body
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name.definition.method))

(function_definition declarator: (function_declarator declarator: (field_identifier) @name.definition.method))

; out-of-class definitions: `double Shape::area() {...}`, `ns::Shape::area`
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier name: (identifier) @name.definition.method)))

(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier name: (qualified_identifier name: (identifier) @name.definition.method))))

(call_expression function: (qualified_identifier name: (identifier) @name.reference.call))

(namespace_identifier) @name.reference.module
