; Definitions and references shared by JavaScript and TypeScript (javascript.scm / typescript.scm add the rest).

(class_declaration name: (_) @name.definition.class)

(function_declaration name: (identifier) @name.definition.function)

(generator_function_declaration name: (identifier) @name.definition.function)

(method_definition name: (property_identifier) @name.definition.method)

; const handler = () => ...; const handler = function () {...}
(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function_expression)])

; exports.handler = function () {...}; Foo.prototype.bar = () => ...
(assignment_expression
  left: (member_expression property: (property_identifier) @name.definition.function)
  right: [(arrow_function) (function_expression)])

(call_expression function: (identifier) @name.reference.call)

(call_expression function: (member_expression property: (property_identifier) @name.reference.call))

(new_expression constructor: (identifier) @name.reference.class)

(import_specifier name: (identifier) @name.reference.import)
