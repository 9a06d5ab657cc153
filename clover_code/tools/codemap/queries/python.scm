; Definitions and references for the repo map.
; Capture names: name.definition.<kind> / name.reference.<kind>.

(class_definition name: (identifier) @name.definition.class)

(function_definition name: (identifier) @name.definition.function)

; module-level constants and aliases: `MAX_SIZE = 10`, `Handler = Callable[...]`
(module (expression_statement (assignment left: (identifier) @name.definition.constant)))

(call function: (identifier) @name.reference.call)

(attribute attribute: (identifier) @name.reference.attribute)

(class_definition superclasses: (argument_list (identifier) @name.reference.class))

(type (identifier) @name.reference.type)

(decorator (identifier) @name.reference.decorator)

(import_from_statement name: (dotted_name (identifier) @name.reference.import))

(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name.reference.import)))
