export const DEBIAN_SUITE: string;
export const DEBIAN_PACKAGES: string[];
export const NODE_MAJOR: number;
export const NODE_PATH: string;
export const FERRY_PREFIX: string;
export const ENTRYPOINT: string[];
export const CNI_PLUGINS: string[];
export const CNI_PLUGINS_DIR: string;
