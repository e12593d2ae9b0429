/** The hand-check predicates moved to @ferry/shared-types (ferryd checks its hot requests and rows with them too). */
export * from '@ferry/shared-types/hand-check';
