/** The oracle moved to @ferry/shared-types (ferryd's hand checks are held to their schemas with it too). */
export * from '@ferry/shared-types/testing/oracle';
