; Definitions and references for the repo map.

(function_item name: (identifier) @name.definition.function)

(function_signature_item name: (identifier) @name.definition.function)

(struct_item name: (type_identifier) @name.definition.struct)

(enum_item name: (type_identifier) @name.definition.enum)

(union_item name: (type_identifier) @name.definition.union)

(trait_item name: (type_identifier) @name.definition.trait)

(type_item name: (type_identifier) @name.definition.type)

(mod_item name: (identifier) @name.definition.module)

(macro_definition name: (identifier) @name.definition.macro)

(const_item name: (identifier) @name.definition.constant)

(static_item name: (identifier) @name.definition.constant)

(call_expression function: (identifier) @name.reference.call)

(call_expression function: (field_expression field: (field_identifier) @name.reference.call))

(call_expression function: (scoped_identifier name: (identifier) @name.reference.call))

(macro_invocation macro: (identifier) @name.reference.macro)

(type_identifier) @name.reference.type
