; TypeScript-only definitions and references; ecmascript.scm is applied too.

(abstract_class_declaration name: (type_identifier) @name.definition.class)

(interface_declaration name: (type_identifier) @name.definition.interface)

(type_alias_declaration name: (type_identifier) @name.definition.type)

(enum_declaration name: (identifier) @name.definition.enum)

(function_signature name: (identifier) @name.definition.function)

(method_signature name: (property_identifier) @name.definition.method)

(abstract_method_signature name: (property_identifier) @name.definition.method)

(internal_module name: (identifier) @name.definition.module)

(type_identifier) @name.reference.type

(extends_clause value: (identifier) @name.reference.class)
