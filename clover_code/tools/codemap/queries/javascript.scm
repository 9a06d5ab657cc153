; JavaScript-only references; ecmascript.scm holds the shared patterns.

(class_heritage (identifier) @name.reference.class)
