; Definitions and references for the repo map.

(class_declaration name: (identifier) @name.definition.class)

(interface_declaration name: (identifier) @name.definition.interface)

(enum_declaration name: (identifier) @name.definition.enum)

(record_declaration name: (identifier) @name.definition.class)

(annotation_type_declaration name: (identifier) @name.definition.interface)

(method_declaration name: (identifier) @name.definition.method)

(constructor_declaration name: (identifier) @name.definition.method)

(method_invocation name: (identifier) @name.reference.call)

(object_creation_expression type: (type_identifier) @name.reference.class)

(type_identifier) @name.reference.type
